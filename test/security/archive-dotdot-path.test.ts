import { test } from 'node:test';
import { expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive, UP } from '../fixtures/hostile-archives.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

test('an entry path starting with .. is refused and nothing outside the staging tree changes', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, hostileArchive('dotdot-path').build(), /entry "\.\.\/\.\.\/\.\.\/outside\/pwned-dotdot\.txt": path has a '\.\.' component/);
});

test('a .. component in the middle of an entry path is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [{ path: 'sub/', type: 'dir' }, { path: `sub/../${UP}../outside/pwned.txt`, content: 'x' }]);
  await expectRefused(sb, gzipTar(tar), /path has a '\.\.' component/);
});
