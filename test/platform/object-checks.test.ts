import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { CheckedObjects, keepingChecks } from '../../src/platform/object-checks.js';
import { CHECKED_FILE, checkObjectSync, listObjects, objectName, objectPath } from '../../src/platform/object-store.js';

// docs/design.md §20.3: the record of checked objects trusts an inode only while its change time
// is the one noted after the helper's last link of it.

function objectsWith(contents: string[]): { dir: string; names: string[]; cleanup(): void } {
  const top = fs.mkdtempSync(path.join(os.tmpdir(), 'steward-object-checks-'));
  const dir = path.join(top, 'objects');
  fs.mkdirSync(dir, { mode: 0o700 });
  const names = contents.map((c) => {
    const name = objectName(createHash('sha256').update(c).digest('hex'), 0o444);
    const file = objectPath(dir, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, c, { mode: 0o444 });
    fs.chmodSync(file, 0o444);
    return name;
  });
  return { dir, names, cleanup: () => fs.rmSync(top, { recursive: true, force: true }) };
}

const lstat = (dir: string, name: string): fs.Stats => fs.lstatSync(objectPath(dir, name));

test('a noted object is unchanged until its inode changes: a write (even with its times set back), a chmod, a link', async (t) => {
  const { dir, names, cleanup } = objectsWith(['one', 'two', 'three', 'four']);
  t.after(cleanup);
  const [a, b, c, d] = names as [string, string, string, string];
  const r = CheckedObjects.load(dir);
  assert.equal(r.size, 0, 'no record yet');
  for (const n of names) r.note(n);
  r.save();
  const again = CheckedObjects.load(dir);
  for (const n of names) assert.ok(again.unchanged(n, lstat(dir, n)), `${n} reads back as unchanged`);

  // A write whose mtime and atime are set back: the change time still moves (after a tick of the
  // file system's coarse clock: docs/design.md §20.3 says what a write within it means).
  await new Promise((res) => setTimeout(res, 20));
  const fa = objectPath(dir, a);
  const before = fs.statSync(fa);
  fs.chmodSync(fa, 0o644);
  fs.writeFileSync(fa, 'ONE');
  fs.chmodSync(fa, 0o444);
  fs.utimesSync(fa, before.atime, before.mtime);
  assert.ok(Math.abs(fs.statSync(fa).mtimeMs - before.mtimeMs) < 1, 'the mtime was set back');
  assert.equal(again.unchanged(a, lstat(dir, a)), false, 'a written object is no longer unchanged');
  assert.equal(checkObjectSync(fa, a, 3, (st) => again.unchanged(a, st)).ok, false, 'so its bytes are hashed, and found out');

  fs.chmodSync(objectPath(dir, b), 0o444);
  // A chmod to the same mode still sets the change time; wait a tick of the file system's clock first.
  await new Promise((res) => setTimeout(res, 20));
  fs.chmodSync(objectPath(dir, b), 0o444);
  assert.equal(again.unchanged(b, lstat(dir, b)), false, 'a chmodded object is no longer unchanged');

  await new Promise((res) => setTimeout(res, 20));
  fs.linkSync(objectPath(dir, c), path.join(dir, '..', 'a-tree-name'));
  assert.equal(again.unchanged(c, lstat(dir, c)), false, 'a link changes it too');
  again.note(c);
  assert.ok(again.unchanged(c, lstat(dir, c)), 'noted after the link, it is unchanged');
  assert.ok(again.unchanged(d, lstat(dir, d)), 'an object nobody touched stays unchanged');
  assert.equal(checkObjectSync(objectPath(dir, d), d, 4, (st) => again.unchanged(d, st)).ok, true);
});

// A stage from an index notes the objects it links by the window of its links' change times (the
// first link's and the last's), not by an lstat after each (docs/design.md §20.3).
test('objects noted by the window of a stage\'s links are unchanged until one changes after the window', async (t) => {
  const { dir, names, cleanup } = objectsWith(['one', 'two', 'three']);
  t.after(cleanup);
  const [a, b, c] = names as [string, string, string];
  const treeName = (n: string) => path.join(dir, '..', `tree-${n}`);
  // Links a tick of the file system's clock apart, as a stage's first, middle and last.
  const links: number[] = [];
  for (const n of names) {
    await new Promise((res) => setTimeout(res, 20));
    fs.linkSync(objectPath(dir, n), treeName(n));
    links.push(fs.lstatSync(treeName(n)).ctimeMs);
  }
  const [from, , to] = links as [number, number, number];
  assert.ok(to > from, 'the window spans the links');
  const r = CheckedObjects.load(dir);
  for (const n of names) r.noteLinked(n, lstat(dir, n).ino, from, to);
  r.save();
  const text = fs.readFileSync(path.join(dir, CHECKED_FILE), 'utf8');
  assert.match(text, new RegExp(`^${b} \\d+ ${from} ${to}$`, 'm'), 'a window is written as its two ends');
  const again = CheckedObjects.load(dir);
  for (const n of names) assert.ok(again.unchanged(n, lstat(dir, n)), `${n}, linked within the window, reads back as unchanged`);

  // A change after the window closed sets a change time past it.
  await new Promise((res) => setTimeout(res, 20));
  fs.chmodSync(objectPath(dir, b), 0o444);
  assert.equal(again.unchanged(b, lstat(dir, b)), false, 'a chmod after the window is seen');
  await new Promise((res) => setTimeout(res, 20));
  fs.linkSync(objectPath(dir, c), `${treeName(c)}-2`);
  assert.equal(again.unchanged(c, lstat(dir, c)), false, 'so is a link');
  assert.ok(again.unchanged(a, lstat(dir, a)), 'an object untouched since stays unchanged');
  // Another inode under the name, even with a change time in the window, is not the one checked.
  assert.equal(again.unchanged(a, { ...lstat(dir, a), ino: lstat(dir, a).ino + 1, ctimeMs: from } as fs.Stats), false);

  // A window the clock ran back across notes nothing.
  const back = CheckedObjects.load(dir);
  back.noteLinked(a, lstat(dir, a).ino, to, from);
  assert.equal(back.unchanged(a, lstat(dir, a)), false);
});

test('an object replaced by another inode under its name is not unchanged', (t) => {
  const { dir, names, cleanup } = objectsWith(['one']);
  t.after(cleanup);
  const [a] = names as [string];
  const r = CheckedObjects.load(dir);
  r.note(a);
  const file = objectPath(dir, a);
  const tmp = `${file}.new`;
  // A second inode: created before the old one is unlinked, so it cannot reuse its number.
  fs.writeFileSync(tmp, 'one', { mode: 0o444 });
  fs.renameSync(tmp, file);
  assert.equal(r.unchanged(a, lstat(dir, a)), false);
});

test('a torn or foreign record is ignored whole; the record is no object to list or collect', (t) => {
  const { dir, names, cleanup } = objectsWith(['one', 'two']);
  t.after(cleanup);
  const r = CheckedObjects.load(dir);
  for (const n of names) r.note(n);
  r.save();
  const text = fs.readFileSync(path.join(dir, CHECKED_FILE), 'utf8');
  assert.equal(text.split('\n').filter(Boolean).length, 2);
  // The last: a window that ends before it starts (at 1 ms after 1970).
  for (const bad of [text.slice(0, -5), `${text}garbage\n`, 'x'.repeat(100), `${text.trimEnd()} 1\n`]) {
    fs.writeFileSync(path.join(dir, CHECKED_FILE), bad);
    assert.equal(CheckedObjects.load(dir).size, 0, `ignored: ${JSON.stringify(bad.slice(-20))}`);
  }
  fs.rmSync(path.join(dir, CHECKED_FILE));
  fs.symlinkSync('/etc/passwd', path.join(dir, CHECKED_FILE));
  assert.equal(CheckedObjects.load(dir).size, 0, 'a symlink is not followed');
  fs.rmSync(path.join(dir, CHECKED_FILE));
  r.save();
  return listObjects(dir).then((l) => {
    assert.deepEqual(l.strays, [], 'the record is no stray');
    assert.equal(l.objects.length, 2);
  });
});

test('keepingChecks notes again the objects a change to other links touched, and forgets those changed before it', async (t) => {
  const { dir, names, cleanup } = objectsWith(['one', 'two', 'three']);
  t.after(cleanup);
  const [a, b, c] = names as [string, string, string];
  const treeName = (n: string) => path.join(dir, '..', `tree-${n}`);
  for (const n of names) fs.linkSync(objectPath(dir, n), treeName(n));
  const r = CheckedObjects.load(dir);
  for (const n of names) r.note(n);
  r.save();
  await new Promise((res) => setTimeout(res, 20));
  // b was written before the prune: the prune must not launder it.
  fs.chmodSync(objectPath(dir, b), 0o644);
  fs.appendFileSync(objectPath(dir, b), '!');
  fs.chmodSync(objectPath(dir, b), 0o444);
  await keepingChecks(dir, async () => {
    for (const n of names) fs.unlinkSync(treeName(n));
    fs.unlinkSync(objectPath(dir, c));
  });
  const after = CheckedObjects.load(dir);
  assert.ok(after.unchanged(a, lstat(dir, a)), 'a, unchanged before the prune, is noted again after it');
  assert.equal(after.unchanged(b, lstat(dir, b)), false, 'b, written before the prune, is not');
  assert.deepEqual(after.names().sort(), [a].sort(), 'b and the collected c are forgotten');
});

// A stage takes the record this process last saved from memory while the file is still the one it
// wrote (object-checks.ts `remembered`): anyone else's write must be read, never overlooked.
test('a record is taken from memory only while its file is the one saved: a rewrite or a replacement is read', async (t) => {
  const { dir, names, cleanup } = objectsWith(['one', 'two', 'three']);
  t.after(cleanup);
  const [a, b, c] = names as [string, string, string];
  const r = CheckedObjects.load(dir);
  for (const n of names) r.note(n);
  r.save();
  const file = path.join(dir, CHECKED_FILE);
  const text = fs.readFileSync(file, 'utf8');
  const mine = CheckedObjects.load(dir);
  assert.deepEqual(mine.names().sort(), [...names].sort(), 'the saved record');
  mine.forget(a);
  assert.equal(CheckedObjects.load(dir).size, 3, 'a change to a loaded record is not the remembered one');

  // Rewritten in place (the same inode) without a's line: read again.
  await new Promise((res) => setTimeout(res, 20));
  const withoutA = text.split('\n').filter((l) => l !== '' && !l.startsWith(a)).join('\n') + '\n';
  fs.writeFileSync(file, withoutA);
  assert.deepEqual(CheckedObjects.load(dir).names().sort(), [b, c].sort(), 'a rewrite in place is read');

  // Replaced by another inode of the very bytes saved, with one line torn: ignored whole.
  r.save();
  const tmp = `${file}.other`;
  fs.writeFileSync(tmp, text.slice(0, -3) + 'x\n');
  fs.renameSync(tmp, file);
  assert.equal(CheckedObjects.load(dir).size, 0, 'a replacement is read, and a torn one ignored');

  // Read whole once, then remembered: the same entries again.
  r.save();
  assert.equal(CheckedObjects.load(dir).size, 3);
  fs.rmSync(file);
  assert.equal(CheckedObjects.load(dir).size, 0, 'a record removed is no record, whatever was remembered');
});

test('a save prepared ahead writes what a save would: the later objects as they are then, and nothing stale', (t) => {
  const { dir, names, cleanup } = objectsWith(['one', 'two', 'three', 'four']);
  t.after(cleanup);
  const [a, b, c, d] = names as [string, string, string, string];
  const file = path.join(dir, CHECKED_FILE);
  const lines = () => fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).sort();
  const r = CheckedObjects.load(dir);
  for (const n of [a, b, c]) r.note(n);
  r.prepareSave(new Set([c, d]));
  r.forget(c);
  r.note(d);
  r.save();
  const prepared = lines();
  const plain = CheckedObjects.load(dir);
  plain.save();
  assert.deepEqual(prepared.map((l) => l.split(' ')[0]).sort(), [a, b, d].sort(), 'c forgotten and d noted after the prepare');
  // The same record made without a prepare.
  const fresh = CheckedObjects.load(dir);
  for (const n of [a, b, d]) assert.ok(fresh.unchanged(n, lstat(dir, n)));
  assert.deepEqual(lines(), prepared);

  // A change to an object outside the later ones after the prepare: the prepared text is dropped.
  const s = CheckedObjects.load(dir);
  s.prepareSave(new Set([d]));
  s.forget(a);
  s.save();
  assert.deepEqual(lines().map((l) => l.split(' ')[0]).sort(), [b, d].sort(), 'a, forgotten after the prepare, is not written');
});
