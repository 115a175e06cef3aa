import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive } from '../fixtures/hostile-archives.js';
import { gzipTar } from '../fixtures/tar-writer.js';

test('random bytes are refused as not gzip', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, hostileArchive('random-bytes').build(), /it is not a gzip file/);
});

test('random bytes behind a gzip magic are refused as corrupt gzip', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, Buffer.concat([Buffer.from([0x1f, 0x8b]), randomBytes(4096)]), /the gzip data is corrupt or truncated/);
});

test('well-formed gzip of random bytes is refused as not a tar', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, gzipTar(randomBytes(8192)), /header checksum is wrong/);
});

test('an empty file is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, Buffer.alloc(0), /it is not a gzip file/);
});
