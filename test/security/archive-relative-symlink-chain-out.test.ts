import { test } from 'node:test';
import { expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive } from '../fixtures/hostile-archives.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

test('a chain of symlinks that is lexically inside but really escapes is refused by the tree walk', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  // a/b -> .. is the tree root; c -> a/b/../.. normalizes to "." but resolves to the tree's parent.
  await expectRefused(sb, hostileArchive('relative-symlink-chain-out').build(), /entry "c": symlink target "a\/b\/\.\.\/\.\." resolves outside the tree/);
});

test('a chain through several nested symlinks that ends above the tree is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  // Each link is written before its target exists: node-tar refuses a symlink whose target
  // path runs through a symlink already on disk, but not one that appears later.
  const tar = makeReleaseTar('web', '1.0.0', [
    { path: 'out', type: 'symlink', linkpath: 'x/root/x/root/..' }, // one above the root
    { path: 'x/root', type: 'symlink', linkpath: 'y/up2' }, // the tree root, through up2
    { path: 'x/y/up2', type: 'symlink', linkpath: '../..' }, // the tree root
  ]);
  await expectRefused(sb, gzipTar(tar), /entry "out": symlink target "x\/root\/x\/root\/\.\." resolves outside the tree/);
});

test('a symlink loop is refused after 40 hops', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [{ path: 'loop', type: 'symlink', linkpath: 'loop/again' }]);
  await expectRefused(sb, gzipTar(tar), /goes through more than 40 symlinks/);
});
