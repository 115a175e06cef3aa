import { test } from 'node:test';
import { expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive } from '../fixtures/hostile-archives.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

test('a file entry over an earlier symlink entry is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, hostileArchive('symlink-overwritten-by-file').build(), /entry "s": a file would overwrite an earlier symlink/);
});

test('a folder entry over an earlier symlink entry is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [{ path: 'real/', type: 'dir' }, { path: 's', type: 'symlink', linkpath: 'real' }, { path: 's/', type: 'dir' }]);
  await expectRefused(sb, gzipTar(tar), /entry "s\/": a dir would overwrite an earlier symlink/);
});

test('the same file path twice (spelled ./a and a) is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [{ path: 'd//a.txt', content: '1' }, { path: './d/./a.txt', content: '2' }]);
  await expectRefused(sb, gzipTar(tar), /entry "\.\/d\/\.\/a\.txt": path appears twice in the archive/);
});
