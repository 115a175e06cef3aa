import { test } from 'node:test';
import { expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive, UP } from '../fixtures/hostile-archives.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

test('a relative symlink out of the tree followed by a file through it is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, hostileArchive('symlink-out-then-write-through').build(), /entry "escape": symlink target "\.\.\/\.\.\/\.\.\/outside" points outside the tree/);
});

test('an absolute symlink followed by a file through it is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [
    { path: 'escape', type: 'symlink', linkpath: sb.outside },
    { path: 'escape/pwned.txt', content: 'pwned\n' },
  ]);
  await expectRefused(sb, gzipTar(tar), new RegExp(`entry "escape": symlink target ${JSON.stringify(sb.outside).replace(/[/.]/g, '\\$&')} is absolute`));
});

test('a file written through a symlink is refused even when the symlink points inside', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [
    { path: 'real/', type: 'dir' },
    { path: 'alias', type: 'symlink', linkpath: 'real' },
    { path: 'alias/pwned.txt', content: 'pwned\n' },
  ]);
  await expectRefused(sb, gzipTar(tar), /entry "alias\/pwned\.txt": would be written through the symlink "alias"/);
});

test('a symlink whose target climbs out through a deeper folder is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [{ path: 'a/b/link', type: 'symlink', linkpath: `../../${UP}outside` }]);
  await expectRefused(sb, gzipTar(tar), /entry "a\/b\/link": symlink target "\.\.\/\.\.\/\.\.\/\.\.\/\.\.\/outside" points outside the tree/);
});
