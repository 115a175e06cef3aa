// A sparse member (what `tar --sparse` writes) is refused, named by the file GNU tar would
// write: node-tar ignores the pax GNU.sparse.* records and would install the sparse map and
// data under ./GNUSparseFile.0/<name>, and it skips an old GNU 'S' header without a word.
import { execFileSync } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { expectRefused, makeSandbox, removeSandbox, type Sandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive } from '../fixtures/hostile-archives.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

// A release folder holding sparse.bin, 1 MiB with 4 bytes of data in its middle (a hole on
// either side), tarred by GNU tar with `args`.
async function sparseRelease(sb: Sandbox, args: string[]): Promise<Buffer> {
  const src = path.join(sb.root, 'src');
  await fsp.mkdir(src);
  await fsp.writeFile(path.join(src, 'steward-release.json'), JSON.stringify({ name: 'web', version: '1.0.0', start: { command: ['node', 'server.js'] } }));
  const fh = await fsp.open(path.join(src, 'sparse.bin'), 'w');
  await fh.truncate(1 << 20);
  await fh.write('data', 500_000);
  await fh.close();
  const tgz = path.join(sb.root, 'sparse.tgz');
  execFileSync('tar', ['--sparse', ...args, '-czf', tgz, '-C', src, 'steward-release.json', 'sparse.bin']);
  return fsp.readFile(tgz);
}

for (const version of ['1.0', '0.1', '0.0']) {
  test(`a pax sparse member GNU tar wrote (--sparse --format=posix, sparse format ${version}) is refused by its name`, async (t) => {
    const sb = await makeSandbox();
    t.after(() => removeSandbox(sb));
    const tgz = await sparseRelease(sb, ['--format=posix', `--sparse-version=${version}`]);
    await expectRefused(sb, tgz, /entry "sparse\.bin": is a sparse file \(pax GNU\.sparse\.\* records\)/);
  });
}

test('an old GNU sparse member GNU tar wrote (--sparse --format=gnu, type S) is refused by its name', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tgz = await sparseRelease(sb, ['--format=gnu']);
  await expectRefused(sb, tgz, /entry "sparse\.bin": is a GNU sparse file \(type "S"\)/);
});

test('a crafted pax sparse member is refused by the name in its GNU.sparse.name record', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, hostileArchive('pax-sparse-member').build(), /entry "sparse\.bin": is a sparse file/);
});

test('sparse records in a global pax header are refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [
    { path: 'pax_global_header', type: 'gpax', pax: { 'GNU.sparse.major': '1', 'GNU.sparse.minor': '0' } },
    { path: 'a.txt', content: 'a\n' },
  ]);
  await expectRefused(sb, gzipTar(tar), /entry "pax_global_header": global pax header holds the sparse record "GNU\.sparse\.major"/);
});
