import assert from 'node:assert/strict';
import { lstatSync, promises as fsp, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { objectsDir, versionDir } from '../../src/core/paths.js';
import { CheckedObjects } from '../../src/platform/object-checks.js';
import { CHECKED_FILE, checkObject, objectName, objectPath } from '../../src/platform/object-store.js';
import { rereadTree } from '../../src/platform/tree-reread.js';
import { verifyApp } from '../../src/helper/ops/verify.js';
import { stageIndexed } from '../helpers/object-server.js';
import { objectAttackHost } from '../helpers/object-attacks.js';
import { releaseOf } from '../helpers/object-releases.js';

// docs/design.md §20: an object whose bytes change on disk after it was written (a bit flip, a root
// process writing through a tree's name) is named by `agentctl verify` (object and tree), and no
// later stage links it: the next stage that needs those bytes finds it does not check out,
// removes it, and gets the bytes again.
test('an object flipped on disk is named by verify, and a later stage never links it', async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  t.after(cleanup);
  await stageIndexed(s, srv, '1.0.0', releaseOf('1.0.0', 'one\n'));
  const tree1 = versionDir(s.host.paths, 'web', '1.0.0');
  const entry = (await rereadTree(tree1)).find((e) => e.path === 'lib/m5.js');
  assert.ok(entry && entry.type === 'file');
  const name = objectName(entry.sha256, entry.mode);
  const file = objectPath(objectsDir(s.host.paths, 'web'), name);
  await fsp.chmod(file, 0o644);
  const bytes = await fsp.readFile(file);
  bytes[0] = (bytes[0] as number) ^ 1;
  await fsp.writeFile(file, bytes);
  await fsp.chmod(file, 0o444);

  const found = await verifyApp(s.host.paths, 'web');
  assert.deepEqual(found.problems.map((p) => [p.kind, p.name]).sort(), [['object', name], ['tree', '1.0.0']]);

  // 1.1.0 needs the same bytes: staged from its index, it finds the object bad and takes the
  // tarball, whose bytes make the object again.
  const r = await stageIndexed(s, srv, '1.1.0', releaseOf('1.1.0', 'two\n'));
  assert.equal(r.fallback?.code, 'INTEGRITY_MISMATCH', JSON.stringify(r));
  assert.ok((await checkObject(file, name)).ok, 'the object holds its bytes again');
  const tree2 = versionDir(s.host.paths, 'web', '1.1.0');
  assert.equal(statSync(path.join(tree2, 'lib/m5.js')).ino, statSync(file).ino, "1.1.0 links the good object");
  assert.notEqual(statSync(path.join(tree1, 'lib/m5.js')).ino, statSync(file).ino, "1.0.0's flipped file is no object any more");
  const after = await verifyApp(s.host.paths, 'web');
  assert.deepEqual(after.problems.map((p) => [p.kind, p.name]), [['tree', '1.0.0']], 'only the tree that holds the flipped bytes is named');
});

// docs/design.md §20.3: a stage links a reused object without reading it while the record of
// checked objects says its inode is unchanged. A flip that kept the change time (a disk's own
// corruption, simulated here by noting the flipped object afresh) is what `agentctl verify` is
// for: it names the object and forgets it, and the next stage hashes it and gets the bytes again.
test('an object flipped behind the record is forgotten by verify, and the next stage hashes it', async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  t.after(cleanup);
  await stageIndexed(s, srv, '1.0.0', releaseOf('1.0.0', 'one\n'));
  const dir = objectsDir(s.host.paths, 'web');
  const record = CheckedObjects.load(dir);
  const entry = (await rereadTree(versionDir(s.host.paths, 'web', '1.0.0'))).find((e) => e.path === 'lib/m5.js');
  assert.ok(entry && entry.type === 'file');
  const name = objectName(entry.sha256, entry.mode);
  assert.ok(record.unchanged(name, lstatSync(objectPath(dir, name))), 'the stage noted the object it made');
  const file = objectPath(dir, name);
  await fsp.chmod(file, 0o644);
  const bytes = await fsp.readFile(file);
  bytes[0] = (bytes[0] as number) ^ 1;
  await fsp.writeFile(file, bytes);
  await fsp.chmod(file, 0o444);
  record.note(name);
  record.save();

  const found = await verifyApp(s.host.paths, 'web');
  assert.ok(found.problems.some((p) => p.kind === 'object' && p.name === name));
  assert.equal(CheckedObjects.load(dir).unchanged(name, lstatSync(file)), false, 'verify forgot it');
  const r = await stageIndexed(s, srv, '1.1.0', releaseOf('1.1.0', 'two\n'));
  assert.equal(r.fallback?.code, 'INTEGRITY_MISMATCH', JSON.stringify(r));
  assert.ok((await checkObject(file, name)).ok, 'the object holds its bytes again');
});

// docs/design.md §20.3: a stage from an index notes the objects it links by the window of its
// links' change times. An object it linked is trusted at the next stage while untouched; a flip
// after that stage moves its change time past the window, and the next stage hashes it and finds it.
test('an object a stage from an index linked, flipped after that stage, is found by the next stage', async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  t.after(cleanup);
  await stageIndexed(s, srv, '1.0.0', releaseOf('1.0.0', 'one\n'));
  const linked = await stageIndexed(s, srv, '1.1.0', releaseOf('1.1.0', 'two\n'));
  assert.equal(linked.via, 'objects', JSON.stringify(linked.fallback));
  const dir = objectsDir(s.host.paths, 'web');
  const entry = (await rereadTree(versionDir(s.host.paths, 'web', '1.1.0'))).find((e) => e.path === 'lib/m5.js');
  assert.ok(entry && entry.type === 'file');
  const name = objectName(entry.sha256, entry.mode);
  const file = objectPath(dir, name);
  assert.ok(CheckedObjects.load(dir).unchanged(name, lstatSync(file)), 'the stage noted the object it linked: the next stage would not read it');
  // By a window, written as one time when the stage's links all fell in one tick of the clock.
  assert.match(readFileSync(path.join(dir, CHECKED_FILE), 'latin1'), new RegExp(`^${name} \\d+ [\\d.]+( [\\d.]+)?$`, 'm'));

  // A tick of the file system's clock after the stage, the object's bytes flipped in place.
  await new Promise((res) => setTimeout(res, 20));
  await fsp.chmod(file, 0o644);
  const bytes = await fsp.readFile(file);
  bytes[0] = (bytes[0] as number) ^ 1;
  await fsp.writeFile(file, bytes);
  await fsp.chmod(file, 0o444);
  assert.equal(CheckedObjects.load(dir).unchanged(name, lstatSync(file)), false, 'past the window');
  const r = await stageIndexed(s, srv, '1.2.0', releaseOf('1.2.0', 'three\n'));
  assert.equal(r.fallback?.code, 'INTEGRITY_MISMATCH', JSON.stringify(r));
  assert.ok((await checkObject(file, name)).ok, 'the object holds its bytes again');
  assert.equal(statSync(path.join(versionDir(s.host.paths, 'web', '1.2.0'), 'lib/m5.js')).ino, statSync(file).ino, '1.2.0 links the good object');
});
