// One archive, one tree: what steward accepts it extracts as GNU tar does (the same names,
// kinds, contents, executable bits and symlink targets), for archives other tools wrote:
// hardlinks as `tar czf` and bsdtar write them for a node_modules tree, extended attributes,
// git archive's global header. What it cannot extract the same way it refuses (test/security/).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { DEFAULT_LIMITS, expectExtracts, makeSandbox, removeSandbox, type Sandbox } from '../fixtures/extract-sandbox.js';
import { gnuTarTree, listTree } from '../fixtures/gnu-tar-tree.js';
import { hostileArchive } from '../fixtures/hostile-archives.js';
import { skipUnlessCI } from '../helpers/skip.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';
import { extractArchive } from '../../src/platform/tarball.js';

const ESBUILD = 'node_modules/@esbuild/linux-x64/bin/esbuild';
const LINKS = ['node_modules/esbuild/bin/esbuild', `node_modules/esbuild/${'long-folder-name-'.repeat(7)}/esbuild`];

// A release folder as an npm install of esbuild leaves it: one binary under three names.
async function nodeModulesRelease(sb: Sandbox): Promise<string> {
  const src = path.join(sb.root, 'src');
  await fsp.mkdir(path.join(src, path.dirname(ESBUILD)), { recursive: true });
  await fsp.writeFile(path.join(src, 'steward-release.json'), JSON.stringify({ name: 'web', version: '1.0.0', start: { command: ['node', 'server.js'] } }));
  await fsp.writeFile(path.join(src, 'server.js'), 'console.log(1)\n');
  await fsp.writeFile(path.join(src, ESBUILD), randomBytes(70_000), { mode: 0o755 });
  for (const l of LINKS) {
    await fsp.mkdir(path.join(src, path.dirname(l)), { recursive: true });
    await fsp.link(path.join(src, ESBUILD), path.join(src, l));
  }
  return src;
}

// Extracts `tgz` with steward and with GNU tar and asserts the two trees are one.
async function assertSameTreeAsGnuTar(sb: Sandbox, tgz: Buffer): Promise<void> {
  await expectExtracts(sb, tgz);
  assert.deepEqual(listTree(sb.dest), await gnuTarTree(sb.archive));
}

const WRITERS: Array<[string, string[]]> = [
  ['tar czf (GNU format)', ['tar', '-czf']],
  ['tar --format=posix', ['tar', '--format=posix', '-czf']],
  ['bsdtar (ustar)', ['bsdtar', '--format=ustar', '-czf']],
  ['bsdtar --format=pax', ['bsdtar', '--format=pax', '-czf']],
];

for (const [what, argv] of WRITERS) {
  test(`a node_modules tree with hardlinks tarred by ${what} is staged as GNU tar extracts it, each link one more name of one read-only file`, async (t) => {
    const sb = await makeSandbox();
    t.after(() => removeSandbox(sb));
    const src = await nodeModulesRelease(sb);
    const tgz = path.join(sb.root, 'in.tgz');
    execFileSync(argv[0] as string, [...argv.slice(1), tgz, '-C', src, '.']);
    await assertSameTreeAsGnuTar(sb, await fsp.readFile(tgz));
    const first = await fsp.lstat(path.join(sb.dest, ESBUILD));
    assert.equal(first.nlink, 1 + LINKS.length);
    assert.equal(first.mode & 0o7777, 0o555);
    for (const l of LINKS) assert.equal((await fsp.lstat(path.join(sb.dest, l))).ino, first.ino, l);
  });
}

test('a tree with hardlinks has the tree digest of the same tree with copies', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const src = await nodeModulesRelease(sb);
  const linked = path.join(sb.root, 'linked.tgz');
  const copies = path.join(sb.root, 'copies.tgz');
  execFileSync('tar', ['-czf', linked, '-C', src, '.']);
  execFileSync('tar', ['--hard-dereference', '-czf', copies, '-C', src, '.']);
  const a = await extractArchive({ archivePath: linked, dest: sb.dest, limits: DEFAULT_LIMITS });
  const b = await extractArchive({ archivePath: copies, dest: `${sb.dest}-copies`, limits: DEFAULT_LIMITS });
  assert.equal(a.treeDigest, b.treeDigest);
  assert.equal(a.entries, b.entries);
});

test('a hardlink of a hardlink is one more name of the same file', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [
    { path: './a.txt', content: 'a\n' },
    { path: 'b.txt', type: 'hardlink', linkpath: './a.txt' },
    { path: 'sub/c.txt', type: 'hardlink', linkpath: 'b.txt' },
  ]);
  await assertSameTreeAsGnuTar(sb, gzipTar(tar));
  assert.equal((await fsp.lstat(path.join(sb.dest, 'sub/c.txt'))).nlink, 3);
});

test('extended attributes with binary values (an SELinux label ending in a NUL) are ignored, and the tree is GNU tar\'s', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await assertSameTreeAsGnuTar(sb, hostileArchive('xattrs-with-binary-values').build());
});

// Sets user xattrs with Python's os.setxattr (Node has no call for it); null when it cannot:
// no python3, or a file system without user xattrs.
function setUserXattrs(file: string): string | null {
  const py = "import os,sys; os.setxattr(sys.argv[1], 'user.label', b'system_u:object_r:bin_t:s0\\0'); os.setxattr(sys.argv[1], 'user.blob', bytes([255, 0, 10, 128]))";
  try {
    execFileSync('python3', ['-c', py, file], { stdio: ['ignore', 'ignore', 'pipe'] });
    return null;
  } catch (err) {
    return `cannot set user xattrs here: ${(err as Error).message.split('\n')[0]}`;
  }
}

test('a release GNU tar wrote with --xattrs (binary values, one ending in a NUL) is staged as GNU tar extracts it', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const src = await nodeModulesRelease(sb);
  const why = setUserXattrs(path.join(src, 'server.js'));
  if (why) {
    skipUnlessCI(t, why);
    return;
  }
  const tgz = path.join(sb.root, 'in.tgz');
  execFileSync('tar', ['--xattrs', '--format=posix', '-czf', tgz, '-C', src, '.']);
  const bytes = await fsp.readFile(tgz);
  assert.ok(gunzipSync(bytes).includes('SCHILY.xattr.user.label=system_u:object_r:bin_t:s0\0\n'), 'GNU tar wrote no xattr record');
  await assertSameTreeAsGnuTar(sb, bytes);
});

test('a tree git archive wrote (a global header with its commit as a comment) is GNU tar\'s', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const repo = path.join(sb.root, 'repo');
  await fsp.mkdir(path.join(repo, 'lib'), { recursive: true });
  await fsp.writeFile(path.join(repo, 'steward-release.json'), '{}');
  await fsp.writeFile(path.join(repo, 'lib', 'a.js'), 'a\n');
  await fsp.writeFile(path.join(repo, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
  await fsp.symlink('lib/a.js', path.join(repo, 'link'));
  const git = (...args: string[]): Buffer =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'safe.directory=*', '-C', repo, ...args]);
  git('init', '-q');
  git('add', '.');
  git('commit', '-qm', 'x');
  const tgz = git('archive', '--format=tar.gz', 'HEAD');
  assert.match(execFileSync('tar', ['-tzf', '-'], { input: tgz }).toString(), /steward-release\.json/);
  await assertSameTreeAsGnuTar(sb, tgz);
});
