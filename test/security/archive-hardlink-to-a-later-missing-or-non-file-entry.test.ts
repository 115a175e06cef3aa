// A hardlink is staged only as one more name of a regular file an earlier entry of the same
// archive wrote. Anything else is refused, named by the hardlink: a target that comes later or
// never, a folder, a symlink (linking it would give the tree a second, unchecked symlink),
// itself, and a hardlink header that declares a body (GNU tar reads none, node-tar would read
// it, and every header after it would be read from different places).
import { test } from 'node:test';
import { expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive } from '../fixtures/hostile-archives.js';
import { gzipTar, makeReleaseTar, makeTar, tarHeader, type TarEntrySpec } from '../fixtures/tar-writer.js';

const cases: Array<[string, TarEntrySpec[], RegExp]> = [
  ['a missing entry', [{ path: 'h', type: 'hardlink', linkpath: 'nowhere.txt' }], /entry "h": hardlink target "nowhere\.txt" is not an earlier entry of the archive/],
  ['a folder', [{ path: 'd/', type: 'dir' }, { path: 'h', type: 'hardlink', linkpath: 'd' }], /entry "h": hardlink target "d" is a dir, not a regular file/],
  ['an implicit folder', [{ path: 'd/f.txt', content: 'f' }, { path: 'h', type: 'hardlink', linkpath: 'd/' }], /entry "h": hardlink target "d\/" is a dir, not a regular file/],
  [
    'a symlink',
    [{ path: 's', type: 'symlink', linkpath: 'server.js' }, { path: 'h', type: 'hardlink', linkpath: 's' }],
    /entry "h": hardlink target "s" is a symlink, not a regular file/,
  ],
  ['itself', [{ path: 'h', type: 'hardlink', linkpath: 'h' }], /entry "h": hardlink target "h" is not an earlier entry of the archive/],
  ['the tree root', [{ path: 'h', type: 'hardlink', linkpath: './' }], /entry "h": hardlink target "\.\/" is not an earlier entry/],
];

for (const [what, entries, pattern] of cases) {
  test(`a hardlink to ${what} is refused, named by the hardlink`, async (t) => {
    const sb = await makeSandbox();
    t.after(() => removeSandbox(sb));
    await expectRefused(sb, gzipTar(makeReleaseTar('web', '1.0.0', entries)), pattern);
  });
}

test('a hardlink to an entry that comes later in the archive is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, hostileArchive('hardlink-to-a-later-entry').build(), /entry "early": hardlink target "later\.txt" is not an earlier entry of the archive/);
});

test('a hardlink that carries a body is refused, named by the hardlink', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, hostileArchive('hardlink-with-a-body').build(), /entry "b\.txt": hardlink declares a 6-byte body/);
});

// Some tars put the target's size in a hardlink's header and write no body: read that way,
// the next header lands in the middle of nowhere and was reported as a bad checksum.
test('a hardlink header that declares a size it has no body for is refused by its name, not as a checksum error', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const head = makeTar([{ path: 'steward-release.json', content: '{}' }, { path: 'a.txt', content: 'x'.repeat(700) }], { noEndBlocks: true });
  const link = tarHeader({ name: 'node_modules/esbuild/bin/esbuild', typeflag: '1', size: 700, linkname: 'a.txt' });
  const tail = makeTar([{ path: 'after.txt', content: 'after' }]);
  await expectRefused(sb, gzipTar(Buffer.concat([head, link, tail])), /entry "node_modules\/esbuild\/bin\/esbuild": hardlink declares a 700-byte body/);
});
