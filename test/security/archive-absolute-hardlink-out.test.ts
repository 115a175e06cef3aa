import { test } from 'node:test';
import { expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive } from '../fixtures/hostile-archives.js';

test('a hardlink to an absolute path outside the tree is refused and the target is untouched', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  // The snapshot checks outside/victim.txt keeps its link count, content and mtime.
  await expectRefused(sb, hostileArchive('absolute-hardlink-out').build({ outside: sb.outside }), /entry "h": hardlink target ".*\/outside\/victim\.txt" is absolute/);
});
