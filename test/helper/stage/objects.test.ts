import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { promises as fsp, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { objectsDir, versionDir } from '../../../src/core/paths.js';
import { treeDigestOf } from '../../../src/core/tree-listing.js';
import { listObjects, objectName, objectPath } from '../../../src/platform/object-store.js';
import { noFaults } from '../../../src/platform/faults.js';
import { rereadTree } from '../../../src/platform/tree-reread.js';
import { readMarker } from '../../../src/helper/release-store.js';
import { verifyApp } from '../../../src/helper/ops/verify.js';
import { pruneReleases } from '../../../src/helper/update/prune.js';
import type { UpdateContext } from '../../../src/helper/update/context.js';
import { stageRelease } from '../../../src/helper/stage/stage-release.js';
import { hostWithCurrent, type StagedHost } from '../../helpers/stage-harness.js';
import { sri } from '../../helpers/host.js';
import { gzipTar, makeReleaseTar, type TarEntrySpec } from '../../fixtures/tar-writer.js';

// docs/design.md §20 "Objects": a tree's regular files are hardlinks to objects by content, and
// the tree is what §3 makes, file for file, whatever the layout.

// Bytes that do not compress (a tree of zeros would be refused as a gzip bomb).
const BIG = createHash('sha512').update('big').digest().toString('hex').repeat(1600);

function entries(variant: string): TarEntrySpec[] {
  return [
    { path: 'server.js', content: `console.log(${JSON.stringify(variant)})\n`, mode: 0o664 },
    { path: 'bin/', type: 'dir', mode: 0o777 },
    { path: 'bin/start', content: '#!/bin/sh\nexec node server.js\n', mode: 0o775 },
    // The same bytes as bin/start, but not executable: another object.
    { path: 'doc/start.txt', content: '#!/bin/sh\nexec node server.js\n', mode: 0o644 },
    // The same bytes twice, both plain: one object, two names.
    { path: 'lib/a.js', content: 'module.exports = 1;\n' },
    { path: 'lib/b.js', content: 'module.exports = 1;\n' },
    { path: 'lib/big.bin', content: BIG },
    { path: 'lib/c.js', type: 'hardlink', linkpath: 'lib/a.js' },
    { path: 'lib/current', type: 'symlink', linkpath: 'a.js' },
    { path: 'empty.txt', content: '' },
  ];
}

async function stageTgz(s: StagedHost, version: string, tgz: Buffer, objects = true) {
  const file = path.join(s.host.scratch, `web-${version}-${objects}.tgz`);
  writeFileSync(file, tgz);
  return stageRelease({ ...s.deps, objects }, { kind: 'admin', app: 'web', version, path: file, integrity: sri(tgz), allowUnsigned: true });
}

function pruneContext(s: StagedHost): UpdateContext {
  return { paths: s.host.paths, config: s.deps.config, faults: noFaults } as unknown as UpdateContext;
}

test('a tree staged through objects is the tree the old way makes: the same walk and the same treeDigest', async (t) => {
  const oldWay = await hostWithCurrent();
  const newWay = await hostWithCurrent();
  t.after(() => {
    oldWay.host.cleanup();
    newWay.host.cleanup();
  });
  const tgz = gzipTar(makeReleaseTar('web', '1.0.0', entries('one')));
  const a = await stageTgz(oldWay, '1.0.0', tgz, false);
  const b = await stageTgz(newWay, '1.0.0', tgz, true);
  assert.equal(b.treeDigest, a.treeDigest);
  assert.equal(b.via, 'tarball');
  const walkA = await rereadTree(versionDir(oldWay.host.paths, 'web', '1.0.0'));
  const walkB = await rereadTree(versionDir(newWay.host.paths, 'web', '1.0.0'));
  assert.deepEqual(walkB, walkA, 'byte for byte and mode for mode');
  assert.equal(treeDigestOf(walkB), b.treeDigest, 'the walk gives the digest the marker holds');
  assert.equal((await readMarker(newWay.host.paths, 'web', '1.0.0'))?.treeDigest, a.treeDigest);
  // The old way made no objects for 1.0.0; the new way made one per distinct (bytes, x bit).
  const objs = newWay.host.paths;
  const tree = versionDir(objs, 'web', '1.0.0');
  const dir = objectsDir(objs, 'web');
  assert.equal(statSync(dir).mode & 0o777, 0o700, 'objects/ is root-only');
  const asRoot = process.getuid?.() === 0;
  for (const e of walkB) {
    if (e.type !== 'file') continue;
    const st = statSync(path.join(tree, e.path));
    const obj = statSync(objectPath(dir, objectName(e.sha256, e.mode)));
    assert.equal(st.ino, obj.ino, `${e.path} is a link to its object`);
    assert.equal(obj.mode & 0o7777, e.mode, 'the object has the mode of the tree file');
    if (asRoot) assert.deepEqual([obj.uid, obj.gid], [0, 0]);
  }
  assert.equal(statSync(path.join(tree, 'lib/a.js')).ino, statSync(path.join(tree, 'lib/b.js')).ino, 'the same bytes are one inode');
  assert.notEqual(statSync(path.join(tree, 'bin/start')).ino, statSync(path.join(tree, 'doc/start.txt')).ino, 'the x bit makes another object');
  assert.equal(statSync(tree).mode & 0o7777, 0o555, 'the tree is sealed as §3 seals it');
});

test('a second release reuses the objects of the first and says how many bytes it reused', async (t) => {
  const s = await hostWithCurrent();
  t.after(() => s.host.cleanup());
  const first = await stageTgz(s, '1.0.0', gzipTar(makeReleaseTar('web', '1.0.0', entries('one'))));
  const second = await stageTgz(s, '1.1.0', gzipTar(makeReleaseTar('web', '1.1.0', entries('two'))));
  assert.ok((first.reusedBytes ?? -1) >= 0);
  // Every file but server.js and steward-release.json (which name the version) is shared.
  assert.ok((second.reusedBytes ?? 0) >= 200_000, `reused ${second.reusedBytes}`);
  const p = s.host.paths;
  assert.equal(statSync(path.join(versionDir(p, 'web', '1.0.0'), 'lib/big.bin')).ino, statSync(path.join(versionDir(p, 'web', '1.1.0'), 'lib/big.bin')).ino);
  assert.notEqual(statSync(path.join(versionDir(p, 'web', '1.0.0'), 'server.js')).ino, statSync(path.join(versionDir(p, 'web', '1.1.0'), 'server.js')).ino);
});

test('a prune removes the objects no kept version links, and keeps every other', async (t) => {
  const s = await hostWithCurrent({}, {});
  t.after(() => s.host.cleanup());
  for (const [v, variant] of [['1.0.0', 'one'], ['1.1.0', 'two'], ['1.2.0', 'three']] as const) await stageTgz(s, v, gzipTar(makeReleaseTar('web', v, entries(variant))));
  const dir = objectsDir(s.host.paths, 'web');
  const before = new Set((await listObjects(dir)).objects.map((o) => o.name));
  const server1 = objectName(((await rereadTree(versionDir(s.host.paths, 'web', '1.0.0'))).find((e) => e.path === 'server.js') as { sha256: string }).sha256, 0o444);
  assert.ok(before.has(server1));
  // keepReleases 3 counts current (0.9.0): 1.2.0 and 1.1.0 stay, 1.0.0 goes.
  assert.deepEqual(await pruneReleases(pruneContext(s), 'web', 3), ['1.0.0']);
  const after = (await listObjects(dir)).objects;
  assert.ok(!after.some((o) => o.name === server1), "1.0.0's own server.js went with it");
  assert.ok(after.every((o) => o.nlink > 1), 'every object left is linked by a kept tree');
  for (const v of ['0.9.0', '1.1.0', '1.2.0']) {
    for (const e of await rereadTree(versionDir(s.host.paths, 'web', v))) {
      if (e.type === 'file') assert.ok(after.some((o) => o.name === objectName(e.sha256, e.mode)), `${v} ${e.path} still has its object`);
    }
  }
  const verified = await verifyApp(s.host.paths, 'web');
  assert.deepEqual(verified.problems, []);
  assert.equal(verified.trees, 3);
});

test('verify handles trees staged before objects and trees linked to them alike', async (t) => {
  const s = await hostWithCurrent();
  t.after(() => s.host.cleanup());
  await stageTgz(s, '1.0.0', gzipTar(makeReleaseTar('web', '1.0.0', entries('one'))), false);
  await stageTgz(s, '1.1.0', gzipTar(makeReleaseTar('web', '1.1.0', entries('two'))), true);
  const r = await verifyApp(s.host.paths, 'web');
  assert.deepEqual(r.problems, []);
  assert.equal(r.trees, 3);
  assert.ok(r.objects > 0);
  // A tree staged the old way is changed on disk: verify names it.
  const file = path.join(versionDir(s.host.paths, 'web', '1.0.0'), 'server.js');
  await fsp.chmod(file, 0o644);
  await fsp.writeFile(file, 'tampered\n');
  await fsp.chmod(file, 0o444);
  const after = await verifyApp(s.host.paths, 'web');
  assert.deepEqual(after.problems.map((p) => [p.kind, p.name]), [['tree', '1.0.0']]);
});
