import { test } from 'node:test';
import { expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive, UP } from '../fixtures/hostile-archives.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

// node-tar cuts pax values at the first NUL (innocent.txt), other tools may not: refuse.
test('a NUL byte inside a pax path is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, hostileArchive('nul-in-pax-path').build(), /entry "innocent\.txt": its pax record "path" holds a NUL byte \("innocent\.txt\\u0000\.\.\//);
});

test('a NUL byte inside a pax linkpath is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [
    { path: 'ok.txt', content: 'ok' },
    { path: 'link', type: 'symlink', linkpath: 'ok.txt', pax: { linkpath: Buffer.from(`ok.txt\0${UP}outside`) } },
  ]);
  await expectRefused(sb, gzipTar(tar), /pax record "linkpath" holds a NUL byte/);
});

test('a NUL byte inside a GNU long name is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const longName = Buffer.from(`${'n'.repeat(120)}\0${UP}outside/pwned.txt\0`);
  const tar = makeReleaseTar('web', '1.0.0', [{ path: '././@LongLink', content: longName, type: 'file' }]);
  // Turn that entry into a GNU 'L' header by hand: type flag at 156, checksum recomputed.
  const hdr = 1024;
  tar.write('L', hdr + 156, 'latin1');
  tar.fill(0x20, hdr + 148, hdr + 156);
  let sum = 0;
  for (let i = hdr; i < hdr + 512; i++) sum += tar[i] as number;
  tar.write(sum.toString(8).padStart(6, '0') + '\0 ', hdr + 148, 'latin1');
  const withTarget = Buffer.concat([tar.subarray(0, tar.length - 1024), makeReleaseTar('web', '1.0.0').subarray(1024)]);
  await expectRefused(sb, gzipTar(withTarget), /GNU long path holds a NUL byte/);
});
