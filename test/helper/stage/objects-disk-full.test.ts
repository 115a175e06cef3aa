import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StewardError } from '../../../src/core/errors.js';
import { faultsFromEnv } from '../../../src/platform/faults.js';
import { stageIndexed } from '../../helpers/object-server.js';
import { assertNothingUntrusted, objectAttackHost } from '../../helpers/object-attacks.js';
import { releaseOf } from '../../helpers/object-releases.js';
import { patchRelease } from '../../helpers/patch-releases.js';
import { hasZstd } from '../../../src/core/compression.js';

// docs/design.md §20: a disk that fills up while a stage writes objects fails the stage cleanly
// (DISK_FULL, no fallback to a tarball that would fill it too): nothing in .staging/, only complete
// objects, no tree; the same stage works once there is room.
for (const [what, spec] of [
  ['a pack object is written', 'enospc:write:objects@2'],
  ['the pack is made durable', 'enospc:fsync:objects'],
] as const) {
  test(`a full disk as ${what} fails the stage with DISK_FULL and leaves only complete objects`, async (t) => {
    const { s, srv, cleanup } = await objectAttackHost();
    t.after(cleanup);
    await stageIndexed(s, srv, '1.0.0', releaseOf('1.0.0', 'one\n'));
    // Three files differ from 1.0.0 (server.js, steward-release.json and a new one): a pack of three.
    const v2 = releaseOf('1.1.0', `two ${'y'.repeat(5000)}\n`);
    const faults = faultsFromEnv({ STEWARD_FAULTS: spec }, s.host.paths.root);
    const failed = await stageIndexedWith(s, srv, v2, faults);
    assert.ok(failed instanceof StewardError, String(failed));
    assert.equal(failed.code, 'DISK_FULL', failed.message);
    assert.ok(srv.requests.some((r) => r.includes('1.1.0.pack')), 'the pack was being fetched');
    await assertNothingUntrusted(s, '1.1.0');
    const ok = await stageIndexed(s, srv, '1.1.0', v2);
    assert.equal(ok.via, 'objects', JSON.stringify(ok.fallback));
  });
}

async function stageIndexedWith(s: Parameters<typeof stageIndexed>[0], srv: Parameters<typeof stageIndexed>[1], tgz: Buffer, faults: ReturnType<typeof faultsFromEnv>): Promise<unknown> {
  const saved = s.deps.faults;
  s.deps.faults = faults;
  try {
    await stageIndexed(s, srv, '1.1.0', tgz);
    return null;
  } catch (err) {
    return err;
  } finally {
    s.deps.faults = saved;
  }
}

// The same from a static patch (docs/design.md §20.5): its objects are written as a pack's are.
test('a full disk as a patch\'s object is written fails the stage with DISK_FULL and leaves only complete objects', { skip: hasZstd() ? false : `this runtime (Node ${process.versions.node}) has no zstd: no patch is made or taken` }, async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  srv.offerPatches = true;
  t.after(cleanup);
  await stageIndexed(s, srv, '1.0.0', patchRelease('1.0.0'));
  const v2 = patchRelease('1.1.0');
  const failed = await stageIndexedWith(s, srv, v2, faultsFromEnv({ STEWARD_FAULTS: 'enospc:write:objects@2' }, s.host.paths.root));
  assert.ok(failed instanceof StewardError, String(failed));
  assert.equal(failed.code, 'DISK_FULL', failed.message);
  assert.ok(srv.requests.some((r) => r.includes('1.1.0.from-1.0.0.patch')), 'the patch was being applied');
  assert.ok(!srv.requests.some((r) => r.includes('1.1.0.pack') || r.includes('1.1.0.tgz')), 'nothing else was fetched to fill the disk further');
  await assertNothingUntrusted(s, '1.1.0');
  const ok = await stageIndexed(s, srv, '1.1.0', v2);
  assert.equal(ok.via, 'objects', JSON.stringify(ok.fallback));
  assert.equal(ok.patch?.used, true, JSON.stringify(ok.patch));
});
