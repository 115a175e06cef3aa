import { test } from 'node:test';
import { expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive } from '../fixtures/hostile-archives.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

test('a hardlink to a relative path outside the tree is refused and the target is untouched', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, hostileArchive('relative-hardlink-out').build(), /entry "h": hardlinks are not allowed/);
});

test('a hardlink between two files inside the tree is refused too', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [{ path: 'a.txt', content: 'a\n' }, { path: 'b.txt', type: 'hardlink', linkpath: 'a.txt' }]);
  await expectRefused(sb, gzipTar(tar), /entry "b\.txt": hardlinks are not allowed/);
});
