import { test } from 'node:test';
import { expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive } from '../fixtures/hostile-archives.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

test('a tar cut inside a file body is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, hostileArchive('truncated').build(), /entry "big\.bin": the archive is truncated inside this entry/);
});

test('a tar cut inside a header is refused (node-tar drops a partial last header silently)', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [{ path: 'server.js', content: 'x' }, { path: 'lost.js', content: 'y' }], { truncate: 2048 + 300 });
  await expectRefused(sb, gzipTar(tar), /the archive is truncated inside a header/);
});

test('a gzip stream cut short is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const gz = gzipTar(makeReleaseTar('web', '1.0.0', [{ path: 'server.js', content: 'console.log(1)\n'.repeat(500) }]));
  await expectRefused(sb, gz.subarray(0, Math.floor(gz.length / 2)), /the gzip data is corrupt or truncated/);
});
