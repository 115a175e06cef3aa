// A name GNU tar and node-tar would read differently is refused, named by the entry:
// node-tar drops a pax record that is not valid UTF-8 or holds a newline (it reads records
// line by line) and uses the short ustar name; GNU tar writes the pax path's bytes. A ustar or
// GNU long name that is not UTF-8 would become U+FFFD under node-tar and raw bytes under GNU tar.
import { execFileSync } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive } from '../fixtures/hostile-archives.js';
import { gzipTar, makeReleaseTar, makeTar, paxRecord, tarHeader, withRawName } from '../fixtures/tar-writer.js';

test('a pax path that is not valid UTF-8 is refused, named by the entry', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, hostileArchive('pax-path-not-utf8').build(), /entry "short\.txt": its pax record "path" is not valid UTF-8 \("long\uFFFD\.txt"\)/);
});

test('a pax path holding a newline is refused, named by the entry', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, hostileArchive('pax-path-with-newline').build(), /entry "short\.txt": its pax record "path" holds a newline \("long\\nname\.txt"\)/);
});

test('a pax linkpath that is not valid UTF-8 or holds a newline is refused, named by the symlink', async (t) => {
  for (const bad of [Buffer.from([0x61, 0xc3]), Buffer.from('a\nb')]) {
    const sb = await makeSandbox();
    try {
      const tar = makeReleaseTar('web', '1.0.0', [{ path: 'link', type: 'symlink', linkpath: 'server.js', pax: { linkpath: bad } }]);
      await expectRefused(sb, gzipTar(tar), /entry "link": its pax record "linkpath" (is not valid UTF-8|holds a newline)/);
    } finally {
      await removeSandbox(sb);
    }
  }
});

test('a ustar name that is not valid UTF-8 (latin1) is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const head = makeReleaseTar('web', '1.0.0', [], { noEndBlocks: true });
  const header = withRawName(tarHeader({ name: 'x', typeflag: '0', size: 0 }), Buffer.from('caf\xe9.txt', 'latin1'));
  await expectRefused(sb, gzipTar(Buffer.concat([head, header, Buffer.alloc(1024)])), /entry "caf\uFFFD\.txt": its name is not valid UTF-8/);
});

test('names GNU tar wrote from a file name that is not UTF-8 are refused (gnu long name, pax)', async (t) => {
  for (const format of ['gnu', 'posix']) {
    const sb = await makeSandbox();
    try {
      const src = path.join(sb.root, 'src');
      await fsp.mkdir(src);
      await fsp.writeFile(path.join(src, 'steward-release.json'), '{}');
      // Over 100 bytes, so that GNU tar writes it in a long-name or pax record.
      const name = Buffer.concat([Buffer.from('n'.repeat(120)), Buffer.from([0xe9]), Buffer.from('.txt')]);
      await fsp.writeFile(Buffer.concat([Buffer.from(src + '/'), name]), 'x');
      execFileSync('tar', [`--format=${format}`, '-czf', sb.archive + '.in', '-C', src, '.'], { env: { ...process.env, LC_ALL: 'C' } });
      // Gone before the sandbox's snapshot, which reads names as UTF-8.
      await fsp.rm(src, { recursive: true });
      await expectRefused(sb, await fsp.readFile(sb.archive + '.in'), /(GNU long path|its pax record "path") is not valid UTF-8/);
    } finally {
      await removeSandbox(sb);
    }
  }
});

test('an extended attribute whose newline would let node-tar read a record GNU tar never sees is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  // To node-tar, the line after the newline is a "path" record of its own; to GNU tar it is
  // the attribute's bytes.
  const hidden = paxRecord('path', 'pwned.txt').toString().replace(/\n$/, '');
  const tar = makeTar([
    { path: 'steward-release.json', content: '{}' },
    { path: 'a.txt', content: 'a', pax: { 'SCHILY.xattr.user.x': Buffer.from(`v\n${hidden}`) } },
  ]);
  await expectRefused(sb, gzipTar(tar), /entry "a\.txt": its pax record "SCHILY\.xattr\.user\.x" holds a newline and then what node-tar would read as a record/);
});
