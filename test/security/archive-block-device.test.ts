import { test } from 'node:test';
import { expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive } from '../fixtures/hostile-archives.js';

test('a block device entry is refused and nothing is created', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, hostileArchive('block-device').build(), /entry "disk": device files are not allowed \(BlockDevice\)/);
});
