// The walk after extraction (src/platform/tree-walk.ts): an lstat walk of the whole tree that
// checks it against what the writer made. Each test extracts in-process, changes the tree the
// way nothing but another writer could, and expects the walk to refuse it.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { StewardError } from '../../src/core/errors.js';
import { UnpackFeed } from '../../src/platform/tar-unpack-feed.js';
import { checkAndSealTree } from '../../src/platform/tree-walk.js';
import { DEFAULT_LIMITS, makeSandbox, removeSandbox, type Sandbox } from '../fixtures/extract-sandbox.js';
import { makeTar } from '../fixtures/tar-writer.js';

const TAR = makeTar([
  { path: 'a.txt', content: 'alpha\n' },
  { path: 'bin/run', content: '#!/bin/sh\n', mode: 0o755 },
  { path: 'lib/deep/util.js', content: 'module.exports = 1;\n', mode: 0o644 },
  { path: 'lib/link', type: 'symlink', linkpath: 'deep/util.js' },
]);

async function extracted(t: import('node:test').TestContext): Promise<{ sb: Sandbox; feed: UnpackFeed; at: (rel: string) => string }> {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  fs.mkdirSync(sb.dest, { mode: 0o700 });
  const feed = new UnpackFeed(sb.dest, DEFAULT_LIMITS, TAR.length);
  feed.feed(TAR);
  feed.finish();
  return { sb, feed, at: (rel) => path.join(sb.dest, rel) };
}

function refused(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof StewardError, String(err));
    assert.equal(err.code, 'UNSAFE_ARCHIVE', err.message);
    assert.match(err.message, pattern);
    return true;
  });
}

test('an untouched tree passes: folders 0555, files 0444 or 0555, counts from the writer', async (t) => {
  const { sb, feed, at } = await extracted(t);
  const r = checkAndSealTree(sb.dest, feed.written);
  // a.txt bin bin/run lib lib/deep lib/deep/util.js lib/link; the bytes of the three files.
  assert.deepEqual([r.entries, r.bytes], [7, 6 + 10 + 20]);
  const mode = (rel: string): number => fs.lstatSync(at(rel)).mode & 0o7777;
  assert.deepEqual([mode('a.txt'), mode('bin/run'), mode('lib/deep/util.js'), mode('bin'), mode('lib/deep')], [0o444, 0o555, 0o444, 0o555, 0o555]);
  assert.equal(mode('.'), 0o700);
});

test('an entry the writer did not make is refused', async (t) => {
  const { sb, feed, at } = await extracted(t);
  fs.writeFileSync(at('lib/deep/planted.js'), 'x');
  refused(() => checkAndSealTree(sb.dest, feed.written), /"lib\/deep\/planted.js": is in the tree but the extraction did not make it/);
});

test('an entry the writer made that is gone is refused', async (t) => {
  const { sb, feed, at } = await extracted(t);
  fs.unlinkSync(at('a.txt'));
  refused(() => checkAndSealTree(sb.dest, feed.written), /"a.txt": was extracted but is no longer in the tree/);
});

test('a file whose size changed after it was written is refused', async (t) => {
  const { sb, feed, at } = await extracted(t);
  fs.chmodSync(at('a.txt'), 0o644);
  fs.appendFileSync(at('a.txt'), 'more');
  fs.chmodSync(at('a.txt'), 0o444);
  refused(() => checkAndSealTree(sb.dest, feed.written), /"a.txt": is 10 bytes but 6 were written/);
});

test('a file replaced by a symlink is refused', async (t) => {
  const { sb, feed, at } = await extracted(t);
  fs.unlinkSync(at('a.txt'));
  fs.symlinkSync('bin/run', at('a.txt'));
  refused(() => checkAndSealTree(sb.dest, feed.written), /"a.txt": is a symlink but the extraction made a file/);
});

test('a file with a second hard link is refused', async (t) => {
  const { sb, feed, at } = await extracted(t);
  fs.linkSync(at('a.txt'), path.join(sb.outside, 'other-name'));
  refused(() => checkAndSealTree(sb.dest, feed.written), /"a.txt": has 2 hard links/);
});

test('a file whose mode changed is refused', async (t) => {
  const { sb, feed, at } = await extracted(t);
  fs.chmodSync(at('a.txt'), 0o4755);
  refused(() => checkAndSealTree(sb.dest, feed.written), /"a.txt": has mode 4755, not 444/);
});

test('a symlink pointed elsewhere inside the tree is refused', async (t) => {
  const { sb, feed, at } = await extracted(t);
  fs.unlinkSync(at('lib/link'));
  fs.symlinkSync('../a.txt', at('lib/link'));
  refused(() => checkAndSealTree(sb.dest, feed.written), /"lib\/link": points to "..\/a.txt", not to the target the archive gave/);
});

test('a symlink pointed out of the tree is refused', async (t) => {
  const { sb, feed, at } = await extracted(t);
  fs.unlinkSync(at('lib/link'));
  fs.symlinkSync('../../../outside', at('lib/link'));
  refused(() => checkAndSealTree(sb.dest, feed.written), /"lib\/link": symlink target .* resolves outside the tree/);
});

test('a FIFO is refused', async (t) => {
  const { sb, feed, at } = await extracted(t);
  execFileSync('mkfifo', [at('bin/pipe')]);
  refused(() => checkAndSealTree(sb.dest, feed.written), /"bin\/pipe": is a FIFO/);
});

test('files get their final mode through the fd whatever the umask', async (t) => {
  const old = process.umask(0o277);
  let r: Awaited<ReturnType<typeof extracted>>;
  try {
    r = await extracted(t);
  } finally {
    process.umask(old);
  }
  const mode = (rel: string): number => fs.lstatSync(r.at(rel)).mode & 0o7777;
  assert.deepEqual([mode('a.txt'), mode('bin/run')], [0o444, 0o555]);
  checkAndSealTree(r.sb.dest, r.feed.written);
});

test('names the archive hardlinked to one file that are not one inode are refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  fs.mkdirSync(sb.dest, { mode: 0o700 });
  const tar = makeTar([
    { path: 'a.txt', content: 'same\n' },
    { path: 'b.txt', type: 'hardlink', linkpath: 'a.txt' },
    { path: 'c.txt', content: 'also\n' },
    { path: 'd.txt', type: 'hardlink', linkpath: 'c.txt' },
  ]);
  const feed = new UnpackFeed(sb.dest, DEFAULT_LIMITS, tar.length);
  feed.feed(tar);
  feed.finish();
  const at = (rel: string): string => path.join(sb.dest, rel);
  // Every count stays 2, but b.txt is now c.txt's inode and d.txt a.txt's.
  fs.unlinkSync(at('b.txt'));
  fs.unlinkSync(at('d.txt'));
  fs.linkSync(at('c.txt'), at('b.txt'));
  fs.linkSync(at('a.txt'), at('d.txt'));
  refused(() => checkAndSealTree(sb.dest, feed.written), /"b\.txt": is not the file the archive hardlinked it to/);
});

test('a file the archive hardlinked that lost a name is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  fs.mkdirSync(sb.dest, { mode: 0o700 });
  const tar = makeTar([{ path: 'a.txt', content: 'same\n' }, { path: 'b.txt', type: 'hardlink', linkpath: 'a.txt' }]);
  const feed = new UnpackFeed(sb.dest, DEFAULT_LIMITS, tar.length);
  feed.feed(tar);
  feed.finish();
  fs.unlinkSync(path.join(sb.dest, 'b.txt'));
  fs.writeFileSync(path.join(sb.dest, 'b.txt'), 'same\n', { mode: 0o444 });
  refused(() => checkAndSealTree(sb.dest, feed.written), /"a\.txt": has 1 hard links, not the 2 the archive made/);
});
