import { test } from 'node:test';
import { expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive } from '../fixtures/hostile-archives.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

test('a hardlink to a relative path outside the tree is refused and the target is untouched', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, hostileArchive('relative-hardlink-out').build(), /entry "h": hardlink target "\.\.\/\.\.\/\.\.\/outside\/victim\.txt" has a '\.\.' component/);
});

test("a hardlink whose target has a '..' component is refused even when it stays inside the tree", async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [{ path: 'a/', type: 'dir' }, { path: 'x.txt', content: 'x' }, { path: 'h', type: 'hardlink', linkpath: 'a/../x.txt' }]);
  await expectRefused(sb, gzipTar(tar), /entry "h": hardlink target "a\/\.\.\/x\.txt" has a '\.\.' component/);
});
