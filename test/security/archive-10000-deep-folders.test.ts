import { test } from 'node:test';
import { expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive } from '../fixtures/hostile-archives.js';
import { gzipTar, makeReleaseTar, type TarEntrySpec } from '../fixtures/tar-writer.js';

test('a folder 10,000 levels deep is refused for its depth before anything is made', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, hostileArchive('10000-deep-folders').build(), /entry "d\/d\/d.*": path is deeper than 64 folders \(10000\)/);
});

test('nested folder entries one level at a time are refused at level 65', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const entries: TarEntrySpec[] = [];
  for (let depth = 1; depth <= 200; depth++) entries.push({ path: 'd/'.repeat(depth), type: 'dir' });
  await expectRefused(sb, gzipTar(makeReleaseTar('web', '1.0.0', entries)), /path is deeper than 64 folders \(65\)/);
});
