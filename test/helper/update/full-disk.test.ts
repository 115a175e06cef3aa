import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readlinkSync, rmSync } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../../../src/core/errors.js';
import { stagingDir } from '../../../src/core/paths.js';
import { freeBytes } from '../../../src/platform/disk.js';
import { readCurrent, readMarker } from '../../../src/helper/release-store.js';
import { readAppState } from '../../../src/helper/state/app-state.js';
import { readJournal } from '../../../src/helper/update/journal.js';
import { assertHostSound, makeFaultHost, type FaultHost } from '../../helpers/fault-host.js';
import { fillDisk, withSmallDisk } from '../../helpers/small-disk.js';

// Issue 7 item 4, a REAL full disk: the host (release store and /var/lib/steward) lives on a
// 16 MiB tmpfs, so ENOSPC comes from the kernel, not from the seam.

const MiB = 1024 * 1024;

// The space of a failed stage comes back: within 2 s (once, a fresh clone saw less free space
// right after a failed stage, never reproduced; a late return is printed, so a next one says
// how late). If it does not, the failure lists what this process still holds open under
// `root`: an fd left open on a removed file keeps its space.
async function assertSpaceBack(root: string, before: number): Promise<void> {
  const started = Date.now();
  let now = await freeBytes(root);
  while (now < before - 64 * 1024 && Date.now() - started < 2000) {
    await new Promise((r) => setTimeout(r, 20));
    now = await freeBytes(root);
  }
  if (now >= before - 64 * 1024 && Date.now() - started >= 20) console.log(`# full-disk: the space came back after ${Date.now() - started} ms`);
  const held = readdirSync('/proc/self/fd')
    .map((fd) => {
      try {
        return `${fd} -> ${readlinkSync(`/proc/self/fd/${fd}`)}`;
      } catch {
        return null;
      }
    })
    .filter((l): l is string => l !== null && l.includes(path.dirname(root)));
  assert.ok(now >= before - 64 * 1024, `the space is given back: ${before - now} bytes short after 2 s; fds open under the disk: ${held.join(', ') || 'none'}`);
}

async function hostWithOne(root: string, scratch: string): Promise<FaultHost> {
  const fh = await makeFaultHost(root, scratch);
  const ctx = fh.context();
  await fh.stage(ctx, '1.0.0', 3 * MiB);
  assert.equal((await fh.update(ctx, '1.0.0', 'install-1')).outcome, 'active');
  return fh;
}

test('a release bigger than the space left is refused before a byte is written (DISK_FULL), and one that fills the disk while extracting is DISK_FULL with staging cleaned', (t) =>
  withSmallDisk(t, async (root, scratch) => {
    const fh = await hostWithOne(root, scratch);
    const ctx = fh.context();
    const free = await freeBytes(root);
    // 1. The statfs check: the archive plus the 10 MiB reserve do not fit.
    await assert.rejects(fh.stage(ctx, '2.0.0', Math.floor(free / 2)), (err: unknown) => {
      assert.ok(err instanceof StewardError, String(err));
      assert.equal(err.code, 'DISK_FULL', err.message);
      return true;
    });
    // 2. Without the reserve the check passes, but the kernel's ENOSPC comes in the middle of
    // the stage: through the archive file (the bound lowered to 0), the archive and its tree do
    // not both fit; held in memory, the tree alone does not fit (zeros: it is far larger than
    // its archive, which passes the check).
    ctx.config.fetch.diskReserveBytes = 0;
    const left = await freeBytes(root);
    for (const [how, extra, opts] of [
      ['through the archive file', Math.floor(left * 0.7), { archiveInMemoryMaxBytes: 0 }],
      ['held in memory', Math.floor(left * 0.5), { zeroBytes: Math.floor(left * 0.7) }],
    ] as const) {
      await assert.rejects(fh.stage(ctx, '2.0.0', extra, opts), (err: unknown) => {
        assert.ok(err instanceof StewardError, String(err));
        assert.equal(err.code, 'DISK_FULL', `${how}: ${err.code}: ${err.message}`);
        assert.match(err.message, /web 2\.0\.0/);
        return true;
      });
      assert.deepEqual(readdirSync(stagingDir(fh.paths, 'web')), [], `${how}: staging is cleaned`);
      assert.equal(await readMarker(fh.paths, 'web', '2.0.0'), null, `${how}: nothing half-staged looks staged`);
      assert.deepEqual(await readCurrent(fh.paths, 'web'), { state: 'valid', version: '1.0.0' });
      await assertSpaceBack(root, free);
    }
    // A release that fits still stages and activates.
    await fh.stage(ctx, '2.0.0', MiB);
    assert.equal((await fh.update(ctx, '2.0.0', 'fits')).outcome, 'active');
    await fh.restart();
    await assertHostSound(fh, { versions: ['1.0.0', '2.0.0'], highestAtLeast: '2.0.0' });
  }));

test('a disk full before the activation refuses it (DISK_FULL) and changes nothing', (t) =>
  withSmallDisk(t, async (root, scratch) => {
    const fh = await hostWithOne(root, scratch);
    const ctx = fh.context();
    await fh.stage(ctx, '2.0.0', MiB);
    const before = await readJournal(fh.paths, 'web');
    const filler = fillDisk(root);
    await assert.rejects(fh.update(ctx, '2.0.0', 'on-a-full-disk'), (err: unknown) => {
      assert.ok(err instanceof StewardError, String(err));
      assert.equal(err.code, 'DISK_FULL', err.message);
      return true;
    });
    assert.deepEqual(await readJournal(fh.paths, 'web'), before, 'the journal is as it was');
    assert.deepEqual(await readCurrent(fh.paths, 'web'), { state: 'valid', version: '1.0.0' });
    assert.equal((await readAppState(fh.paths, 'web')).blocked, null, 'nothing is blocked: nothing changed');
    rmSync(filler);
    await fh.restart();
    await assertHostSound(fh, { versions: ['1.0.0', '2.0.0'], highestAtLeast: '1.0.0' });
    assert.equal((await fh.update(fh.context(), '2.0.0', 'after-space-freed')).outcome, 'active');
  }));

// A disk that fills during the activation: test/security/verdict-and-rollback-verdict-enospc.test.ts.
