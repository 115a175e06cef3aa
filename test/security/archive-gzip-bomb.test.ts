import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive } from '../fixtures/hostile-archives.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

test('an archive that inflates more than 200 times its size is refused while streaming', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  // 20 MiB of zeros gzip to about 20 KiB: a ratio near 1000.
  await expectRefused(sb, hostileArchive('gzip-bomb').build(), /it decompresses to more than 200 times its size \(gzip bomb\)/);
});

test('an archive that inflates past maxBytes is refused even when the declared sizes are small', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  // Incompressible bytes after the end-of-archive blocks: the ratio stays near 1, the size does not.
  const tar = Buffer.concat([makeReleaseTar('web', '1.0.0', [{ path: 'small.txt', content: 'x' }]), randomBytes(2 * 1024 * 1024)]);
  await expectRefused(sb, gzipTar(tar), /it decompresses to more than 1048576 bytes/, { maxBytes: 1024 * 1024 });
});

test('entries whose declared sizes add up past maxBytes are refused at the header', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [{ path: 'huge.bin', content: Buffer.alloc(1024), size: 64 * 1024 * 1024 * 1024 }], { truncate: 4096 });
  await expectRefused(sb, gzipTar(tar), /entry "huge\.bin": the declared entry sizes add up to more than 2147483648 bytes/);
});
