import { test } from 'node:test';
import { expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive } from '../fixtures/hostile-archives.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

test('a pax path override with .. behind a harmless ustar name is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, hostileArchive('pax-path-override').build(), /entry "\.\.\/\.\.\/\.\.\/outside\/pwned-pax\.txt": pax path override is absolute or has a '\.\.' component/);
});

test('an absolute pax path override is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [{ path: 'harmless.txt', content: 'x', pax: { path: `${sb.outside}/pwned-pax-abs.txt` } }]);
  await expectRefused(sb, gzipTar(tar), /pax path override is absolute or has a '\.\.' component/);
});

test('an absolute pax linkpath override on a harmless symlink is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [{ path: 'link', type: 'symlink', linkpath: 'server.js', pax: { linkpath: sb.outside } }]);
  await expectRefused(sb, gzipTar(tar), /pax linkpath override ".*outside" is absolute/);
});

test('a malformed pax record is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [{ path: 'PaxHeader/x', type: 'pax', pax: {} }, { path: 'x.txt', content: 'x' }]);
  // Replace the empty pax body with a record whose length lies.
  const body = Buffer.from('99 path=x.txt\n');
  const hdr = 1024;
  const fixed = Buffer.concat([
    tar.subarray(0, hdr),
    Buffer.from(rewriteSize(tar.subarray(hdr, hdr + 512), body.length)),
    Buffer.concat([body, Buffer.alloc(512 - body.length)]),
    tar.subarray(hdr + 512),
  ]);
  await expectRefused(sb, gzipTar(fixed), /malformed pax record/);
});

function rewriteSize(header: Buffer, size: number): Buffer {
  const h = Buffer.from(header);
  h.write(size.toString(8).padStart(11, '0') + '\0', 124, 12, 'latin1');
  h.fill(0x20, 148, 156);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8, 'latin1');
  return h;
}
