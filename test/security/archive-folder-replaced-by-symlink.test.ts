import { test } from 'node:test';
import { expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive, UP } from '../fixtures/hostile-archives.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

test('a symlink that would replace an earlier folder entry is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, hostileArchive('folder-replaced-by-symlink').build(), /entry "app": a symlink would replace a folder/);
});

test('a symlink that would replace a folder made implicitly by an earlier file is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [
    { path: 'lib/a.js', content: 'a\n' },
    { path: 'other/', type: 'dir' },
    { path: 'lib', type: 'symlink', linkpath: 'other' },
    { path: 'lib/b.js', content: 'b\n' },
  ]);
  await expectRefused(sb, gzipTar(tar), /entry "lib": a symlink would replace a folder/);
});

test('the classic folder, symlink out, file through it sequence is refused at the symlink', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [
    { path: 'app/', type: 'dir' },
    { path: 'app', type: 'symlink', linkpath: `${UP}outside` },
    { path: 'app/pwned.txt', content: 'pwned\n' },
  ]);
  await expectRefused(sb, gzipTar(tar), /entry "app": symlink target .* points outside the tree/);
});
