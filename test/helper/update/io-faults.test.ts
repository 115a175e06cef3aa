import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../../../src/core/errors.js';
import { isTerminal } from '../../../src/core/journal-schema.js';
import { stagingDir } from '../../../src/core/paths.js';
import { IO_FAULT_OPS, type IoFaultPoint } from '../../../src/platform/faults.js';
import { readCurrent, readMarker } from '../../../src/helper/release-store.js';
import { readAppState } from '../../../src/helper/state/app-state.js';
import { readJournal } from '../../../src/helper/update/journal.js';
import { assertHostSound, fastScratch, makeFaultHost, type FaultHost } from '../../helpers/fault-host.js';

// Issue 7 item 4: ENOSPC and EIO on each step (write, fsync, rename, folder fsync) of each
// durable write of the update transaction, through the real fault seam (STEWARD_FAULTS):
// the journal (activating, verdict, rollback verdict), the state, the receipts, the `current`
// swap (forward and back), staging and the marker. After the fault: a StewardError with a
// closed code or a terminal journal, and `current` a complete valid release; after the
// helper's start (recovery): every invariant of assertHostSound.

const ERRNOS = ['enospc', 'eio'] as const;
// Which occurrence fails: the first, the second (a later write of the same kind), or every one
// (a disk that stays full).
const WHEN: Record<Exclude<IoFaultPoint, 'staging' | 'marker' | 'objects'>, string[]> = {
  journal: ['@1', '@2', ''],
  state: ['@1', ''],
  receipt: ['@1', '@2', ''],
  current: ['@1', '@2', ''],
};

let base: string;
let scratch: ReturnType<typeof fastScratch>;
let template: FaultHost;
const counts = { cases: 0, threw: 0, terminal: 0, recovered: 0 };

before(async () => {
  scratch = fastScratch();
  base = scratch.dir;
  // One host with 1.0.0 and 2.0.0 active and 3.0.0 staged, copied for every case.
  const root = path.join(base, 'template');
  template = await makeFaultHost(root);
  const ctx = template.context();
  for (const v of ['1.0.0', '2.0.0', '3.0.0']) await template.stage(ctx, v);
  for (const v of ['1.0.0', '2.0.0']) assert.equal((await template.update(ctx, v, `setup-${v}`)).outcome, 'active');
});

after(() => {
  console.log(`io faults: ${counts.cases} cases; ${counts.threw} ended in a StewardError, ${counts.terminal} in a terminal journal; ${counts.recovered} recovered at the next start`);
  scratch.cleanup();
});

let n = 0;
async function copyOfTemplate(): Promise<FaultHost> {
  const root = path.join(base, `case-${++n}`);
  execFileSync('cp', ['-a', template.paths.root, root]);
  return makeFaultHost(root);
}

function errnoCode(errno: string): string {
  return errno === 'enospc' ? 'DISK_FULL' : 'IO_ERROR';
}

for (const healthy of [true, false]) {
  describe(`an update to a ${healthy ? 'healthy' : 'failing'} 3.0.0`, () => {
    for (const [point, whens] of Object.entries(WHEN)) {
      for (const [opIndex, op] of IO_FAULT_OPS.entries()) {
        if (point === 'current' && op === 'fsync') continue; // a symlink has no data to fsync
        for (const [whenIndex, when] of whens.entries()) {
          // Both errnos for a disk that keeps failing; one of the two, in turn, for a single
          // failing write (the paths differ only in the code), so each step meets both.
          for (const errno of when === '' ? ERRNOS : [ERRNOS[(opIndex + whenIndex) % 2] as string]) {
            const spec = `${errno}:${op}:${point}${when}`;
            test(`${spec}: a closed error or a terminal journal now; a sound host after the next start`, async () => {
              const fh = await copyOfTemplate();
              if (!healthy) fh.unhealthy.add('3.0.0');
              const ctx = fh.context(spec);
              const attemptId = `f-${n}`;
              counts.cases++;
              let outcome: string;
              try {
                const a = await fh.update(ctx, '3.0.0', attemptId);
                const j = await readJournal(fh.paths, 'web');
                assert.ok(j.state === 'ok' && j.journal.attemptId === attemptId && isTerminal(j.journal.outcome), `the journal is terminal: ${JSON.stringify(j)}`);
                assert.equal(a.outcome, j.journal.outcome, 'the answer is the journal');
                outcome = a.outcome;
                counts.terminal++;
              } catch (err) {
                assert.ok(err instanceof StewardError, `a StewardError, not ${String(err)}`);
                assert.ok(['DISK_FULL', 'IO_ERROR'].includes(err.code), `a disk code, not ${err.code}: ${err.message}`);
                if (err.code === 'DISK_FULL') assert.equal(errno, 'enospc', 'DISK_FULL only for a full disk');
                outcome = `error ${err.code}`;
                counts.threw++;
                // A journal left saying `activating` is recovered at the next start; until then the
                // app is blocked, so no other request acts on a half-written transaction.
                const j = await readJournal(fh.paths, 'web');
                if (j.state === 'ok' && j.journal.attemptId === attemptId && !isTerminal(j.journal.outcome)) {
                  const blocked = (await readAppState(fh.paths, 'web')).blocked ?? ctx.blockedInMemory.get('web');
                  assert.ok(blocked, `the journal says activating after ${err.code}, so the app is blocked`);
                }
              }
              // A healthy update never swaps back, so its second `current` step is never reached.
              const reachable = !(healthy && point === 'current' && when === '@2');
              assert.equal(ctx.fired.length > 0, reachable, `the fault fired: ${ctx.fired}`);
              // Whatever happened, current is a complete valid release right now.
              const cur = await readCurrent(fh.paths, 'web');
              assert.equal(cur.state, 'valid', `current after ${spec} (${outcome}): ${JSON.stringify(cur)}`);
              assert.deepEqual(readdirSync(stagingDir(fh.paths, 'web')), [], 'staging is clean');

              await fh.restart();
              const j = await assertHostSound(fh, { versions: ['1.0.0', '2.0.0', '3.0.0'], highestAtLeast: '2.0.0' });
              if (j.attemptId === attemptId) counts.recovered++;
              if (!healthy && j.attemptId === attemptId) assert.notEqual(j.outcome, 'active', 'a failing release never becomes active');
            });
          }
        }
      }
    }
  });
}

describe('staging a release', () => {
  for (const [pointIndex, point] of (['staging', 'marker', 'objects'] as const).entries()) {
    // The objects' faults (docs/design.md §20): each object filed (write), the syncfs after (fsync).
    for (const [opIndex, op] of IO_FAULT_OPS.filter((o) => point !== 'objects' || o === 'write' || o === 'fsync').entries()) {
      // One errno per step, in turn, so that each point meets both (a real extraction costs).
      for (const errno of [ERRNOS[(pointIndex + opIndex) % 2] as string]) {
        const spec = `${errno}:${op}:${point}`;
        test(`${spec}: ${errnoCode(errno)}, staging cleaned, nothing else changed`, async () => {
          const fh = await copyOfTemplate();
          const before = await readJournal(fh.paths, 'web');
          const ctx = fh.context(spec);
          await assert.rejects(fh.stage(ctx, '4.0.0'), (err: unknown) => {
            assert.ok(err instanceof StewardError, String(err));
            assert.equal(err.code, errnoCode(errno), err.message);
            assert.match(err.message, /web 4\.0\.0/, 'the message names the app and version');
            return true;
          });
          assert.deepEqual(ctx.fired, [`${op}:${point}`], 'the fault fired once');
          assert.deepEqual(readdirSync(stagingDir(fh.paths, 'web')), [], 'staging is clean');
          assert.equal(await readMarker(fh.paths, 'web', '4.0.0'), null, 'no valid 4.0.0 is left');
          assert.deepEqual(await readCurrent(fh.paths, 'web'), { state: 'valid', version: '2.0.0' });
          assert.deepEqual(await readJournal(fh.paths, 'web'), before, 'the journal is untouched');
          assert.equal((await readAppState(fh.paths, 'web')).blocked, null);
          // The next start removes a tree left without its marker; then the same stage works.
          await fh.restart();
          await assertHostSound(fh, { versions: ['1.0.0', '2.0.0', '3.0.0'], highestAtLeast: '2.0.0' });
          await fh.stage(fh.context(), '4.0.0');
          assert.ok(await readMarker(fh.paths, 'web', '4.0.0'));
        });
      }
    }
  }
});
