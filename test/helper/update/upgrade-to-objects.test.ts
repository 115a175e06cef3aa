import assert from 'node:assert/strict';
import { statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { objectsDir, versionDir } from '../../../src/core/paths.js';
import { treeDigestOf } from '../../../src/core/tree-listing.js';
import { listObjects } from '../../../src/platform/object-store.js';
import { rereadTree } from '../../../src/platform/tree-reread.js';
import { readCurrent, readMarker } from '../../../src/helper/release-store.js';
import { stageRelease } from '../../../src/helper/stage/stage-release.js';
import { verifyApp } from '../../../src/helper/ops/verify.js';
import { pruneReleases } from '../../../src/helper/update/prune.js';
import { makeFaultHost } from '../../helpers/fault-host.js';
import { makeReleaseKey, manifestFor, sri } from '../../helpers/host.js';
import { startObjectServer } from '../../helpers/object-server.js';
import { releaseOf } from '../../helpers/object-releases.js';

// docs/design.md §20 "Upgrade": a host whose versions were staged before objects (plain files) takes
// an update staged from its index and objects, rolls back to its old tree, goes forward again,
// and prune and verify handle both kinds of tree.
test('a host with trees staged the old way takes a content-addressed update, rolls back to the old tree, and prunes and verifies both', async (t) => {
  const fh = await makeFaultHost();
  const srv = await startObjectServer();
  t.after(() => {
    srv.close();
    fh.cleanup();
  });
  const ctx = fh.context();
  const key = makeReleaseKey(fh.host, ['web']);
  const tgzOf = new Map<string, Buffer>();
  const put = (v: string) => {
    const tgz = releaseOf(v, `console.log(${JSON.stringify(v)})\n`, { unit: true });
    tgzOf.set(v, tgz);
    writeFileSync(path.join(fh.host.scratch, `web-${v}.tgz`), tgz);
    return tgz;
  };
  // The old steward: no objects.
  for (const v of ['1.0.0', '2.0.0']) {
    const tgz = put(v);
    await stageRelease({ ...ctx, objects: false }, { kind: 'admin', app: 'web', version: v, path: path.join(fh.host.scratch, `web-${v}.tgz`), integrity: sri(tgz), allowUnsigned: true });
    assert.equal((await fh.update(ctx, v, `old-${v}`)).outcome, 'active');
  }
  assert.equal((await listObjects(objectsDir(fh.paths, 'web'))).objects.length, 0, 'no objects yet');
  const oldTree = versionDir(fh.paths, 'web', '2.0.0');
  const oldWalk = await rereadTree(oldTree);
  assert.equal(statSync(path.join(oldTree, 'lib/m3.js')).nlink, 1, 'an old tree holds plain files');

  // The new steward: 3.0.0 staged from its index (the objects come from the tarball's fallback:
  // nothing of it is an object yet), then 3.1.0 from its index and a pack of the difference.
  const stageIndexed = async (v: string) => {
    const tgz = put(v);
    const index = await srv.publish(v, tgz);
    const at = `${srv.base}/v1/artifacts/web/${v}`;
    const manifest = key.sign(manifestFor('web', v, tgz, { url: `${at}.tgz`, index: { url: `${at}.index.json`, ...index }, expires: 1_900_000_000_000 }));
    return stageRelease(ctx, { kind: 'helper', app: 'web', version: v, manifest });
  };
  assert.equal((await stageIndexed('3.0.0')).via, 'tarball');
  assert.equal((await stageIndexed('3.1.0')).via, 'objects');
  // 3.1.0 fails its start: the update rolls back to 2.0.0, the tree staged the old way.
  fh.unhealthy.add('3.1.0');
  const failed = await fh.update(ctx, '3.1.0', 'new-3.1.0');
  assert.equal(failed.outcome, 'rolled-back');
  assert.deepEqual(await readCurrent(fh.paths, 'web'), { state: 'valid', version: '2.0.0' });
  assert.deepEqual(await rereadTree(oldTree), oldWalk, 'the old tree is as it was');
  assert.equal(treeDigestOf(oldWalk), (await readMarker(fh.paths, 'web', '2.0.0'))?.treeDigest);
  // Forward again, to 3.0.0 (objects), then prune to 2: current 3.0.0 and previous 2.0.0 stay.
  assert.equal((await fh.update(ctx, '3.0.0', 'new-3.0.0')).outcome, 'active');
  assert.deepEqual((await verifyApp(fh.paths, 'web')).problems, [], 'verify reads old and new trees alike');
  const removed = await pruneReleases(ctx, 'web', 2);
  assert.deepEqual(removed.sort(), ['1.0.0', '3.1.0']);
  const objects = (await listObjects(objectsDir(fh.paths, 'web'))).objects;
  assert.ok(objects.length > 0 && objects.every((o) => o.nlink > 1), "3.1.0's own objects went with it; 3.0.0's stay");
  const v = await verifyApp(fh.paths, 'web');
  assert.deepEqual(v.problems, []);
  assert.equal(v.trees, 2);
});
