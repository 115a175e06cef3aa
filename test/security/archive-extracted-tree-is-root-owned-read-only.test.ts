import assert from 'node:assert/strict';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { expectExtracts, listDest, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { gzipTar, makeReleaseTar, type TarEntrySpec } from '../fixtures/tar-writer.js';

function releaseEntries(serverJs: string): TarEntrySpec[] {
  return [
    { path: 'server.js', content: serverJs, mode: 0o664 },
    { path: 'bin/', type: 'dir', mode: 0o777 },
    { path: 'bin/start', content: '#!/bin/sh\nexec node server.js\n', mode: 0o775 },
    { path: 'lib/deep/er/', type: 'dir', mode: 0o700 },
    { path: 'lib/deep/er/util.js', content: 'module.exports = 1;\n', mode: 0o600 },
    { path: 'lib/current', type: 'symlink', linkpath: 'deep/er' },
    { path: 'start', type: 'symlink', linkpath: 'bin/start' },
  ];
}

test('a normal release extracts into a root-owned tree with no write or special bits anywhere', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const result = await expectExtracts(sb, gzipTar(makeReleaseTar('web', '1.2.3', releaseEntries('console.log(1)\n'))));
  assert.equal(result.entries, 10); // lib/ and lib/deep/ come from the path of lib/deep/er/
  assert.match(result.treeDigest, /^sha256-[A-Za-z0-9+/]{43}=$/);
  const asRoot = process.getuid?.() === 0;
  for (const { rel, st } of await listDest(sb)) {
    if (asRoot) assert.deepEqual([st.uid, st.gid], [0, 0], `${rel} is owned by root`);
    if (st.isSymbolicLink()) continue;
    const mode = st.mode & 0o7777;
    assert.equal(mode & 0o7000, 0, `${rel} has no setuid, setgid or sticky bit`);
    if (rel === '.') assert.equal(mode, 0o700, 'dest itself stays 0700 for the caller');
    else assert.equal(mode & 0o222, 0, `${rel} (${mode.toString(8)}) has no write bit`);
  }
  const modeOf = async (rel: string): Promise<number> => (await fsp.lstat(path.join(sb.dest, rel))).mode & 0o7777;
  assert.equal(await modeOf('bin/start'), 0o555);
  assert.equal(await modeOf('server.js'), 0o444);
  assert.equal(await modeOf('lib/deep/er/util.js'), 0o444);
  assert.equal(await modeOf('bin'), 0o555);
  assert.equal(await fsp.readFile(path.join(sb.dest, 'lib/current/util.js'), 'utf8'), 'module.exports = 1;\n');
});

test('the tree digest is stable across extractions and changes with one byte of one file', async (t) => {
  const digest = async (serverJs: string): Promise<string> => {
    const sb = await makeSandbox();
    t.after(() => removeSandbox(sb));
    return (await expectExtracts(sb, gzipTar(makeReleaseTar('web', '1.2.3', releaseEntries(serverJs))))).treeDigest;
  };
  const first = await digest('console.log(1)\n');
  assert.equal(await digest('console.log(1)\n'), first);
  assert.notEqual(await digest('console.log(2)\n'), first);
});
