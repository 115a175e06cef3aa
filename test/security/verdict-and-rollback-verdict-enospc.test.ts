import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { StewardError } from '../../src/core/errors.js';
import { readCurrent } from '../../src/helper/release-store.js';
import { readAppState } from '../../src/helper/state/app-state.js';
import { readJournal } from '../../src/helper/update/journal.js';
import { recoverApp } from '../../src/helper/update/recover.js';
import { assertHostSound, makeFaultHost, type FaultHost } from '../helpers/fault-host.js';
import { fillDisk, withSmallDisk } from '../helpers/small-disk.js';

// Issue 15 item 11: a full disk is named as one. When the verdict of an activation cannot be
// written for want of space, the way back cannot write either (on a real full disk its first
// write, the swap back, fails before its own verdict): docs/design.md §4 blocks the app with DISK_FULL.
// It used to be blocked ACTIVATION_INTERRUPTED; and a helper start on the still-full disk could
// not recover it, threw, and left it unblocked, so a later request could act on a journal that
// still said `activating`. The answer stays IO_ERROR (exit 1): DISK_FULL as an error code means
// "refused, nothing changed", and here the journal was written.

const MiB = 1024 * 1024;

async function blockedReason(fh: FaultHost, ctx: ReturnType<FaultHost['context']>): Promise<string | undefined> {
  return (ctx.blockedInMemory.get('web') ?? (await readAppState(fh.paths, 'web')).blocked)?.reason;
}

test('a disk that fills as the new version starts blocks the app with DISK_FULL; a start on the still-full disk keeps it blocked; once space is freed the next start rolls back', (t) =>
  withSmallDisk(t, async (root, scratch) => {
    const fh = await makeFaultHost(root, scratch);
    const ctx = fh.context();
    await fh.stage(ctx, '1.0.0', 3 * MiB);
    assert.equal((await fh.update(ctx, '1.0.0', 'install-1')).outcome, 'active');
    await fh.stage(ctx, '2.0.0', MiB);
    let filler: string | null = null;
    fh.onStart = () => {
      if (filler === null) filler = fillDisk(root);
    };
    await assert.rejects(fh.update(ctx, '2.0.0', 'fills-up'), (err: unknown) => {
      assert.ok(err instanceof StewardError, String(err));
      assert.equal(err.code, 'IO_ERROR', err.message);
      assert.match(err.message, /no space left on device.*the app is blocked \(DISK_FULL\)/);
      return true;
    });
    fh.onStart = undefined;
    assert.ok(filler, 'the disk was filled during the activation');
    assert.equal(await blockedReason(fh, ctx), 'DISK_FULL', 'the app is blocked, and the block names the full disk');
    const activating = await readJournal(fh.paths, 'web');
    assert.equal(activating.state === 'ok' && activating.journal.outcome, 'activating');

    // The helper starts again while the disk is still full: recovery's first write fails.
    const again = fh.context();
    const r = await recoverApp(again, 'web');
    assert.deepEqual([r.action, r.action === 'blocked' && r.reason], ['blocked', 'DISK_FULL'], JSON.stringify(r));
    assert.equal(await blockedReason(fh, again), 'DISK_FULL');
    await assert.rejects(fh.update(again, '2.0.0', 'while-full'), (err: unknown) => err instanceof StewardError && err.code === 'BLOCKED');
    assert.deepEqual(await readJournal(fh.paths, 'web'), activating, 'nothing acted on the journal that says activating');
    assert.equal((await readCurrent(fh.paths, 'web')).state, 'valid', 'current is a complete release');

    rmSync(filler);
    await fh.restart();
    const after = await assertHostSound(fh, { versions: ['1.0.0', '2.0.0'], highestAtLeast: '1.0.0' });
    assert.equal(after.attemptId, 'fills-up');
    assert.equal(after.outcome, 'rolled-back');
    assert.equal(after.reason?.code, 'ACTIVATION_INTERRUPTED');
  }));

test('when the seam fails the verdict and the rollback verdict with ENOSPC, the app is blocked with DISK_FULL', async (t) => {
  const fh = await makeFaultHost();
  t.after(() => fh.cleanup());
  const plain = fh.context();
  for (const v of ['1.0.0', '2.0.0']) await fh.stage(plain, v);
  assert.equal((await fh.update(plain, '1.0.0', 'install-1')).outcome, 'active');
  const ctx = fh.context('enospc:verdict,enospc:rollback-verdict');
  await assert.rejects(fh.update(ctx, '2.0.0', 'both-verdicts'), (err: unknown) => err instanceof StewardError && err.code === 'IO_ERROR' && /disk full/.test(err.message));
  assert.equal(await blockedReason(fh, ctx), 'DISK_FULL');
  await fh.restart();
  assert.equal((await assertHostSound(fh, { versions: ['1.0.0', '2.0.0'], highestAtLeast: '1.0.0' })).reason?.code, 'ACTIVATION_INTERRUPTED');
});
