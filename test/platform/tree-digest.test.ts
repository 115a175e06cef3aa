// The tree digest in `.steward-valid` is built from the hashes the writer took while writing
// (no file is read back). It must be the digest the earlier walk made by re-reading every
// file: the same canonical listing, so a tree staged before and after the change has the
// same treeDigest. Checked two ways: against the value the earlier walk (e2453b8) gave for a
// fixed archive, and against a listing rebuilt here from what is on disk after extraction.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { expectExtracts, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { gzipTar, makeReleaseTar, type TarEntrySpec } from '../fixtures/tar-writer.js';

// Files of several sizes (one spans many 64 KiB chunks), exec and non-exec modes, an explicit
// folder, implicit ones, an empty file, symlinks to a file and to a folder, a non-ASCII name.
const ENTRIES: TarEntrySpec[] = [
  { path: 'server.js', content: 'console.log(1)\n', mode: 0o664 },
  { path: 'bin/', type: 'dir', mode: 0o777 },
  { path: 'bin/start', content: '#!/bin/sh\nexec node server.js\n', mode: 0o775 },
  { path: 'bin/only-group-x', content: 'x', mode: 0o610 },
  { path: 'lib/deep/er/util.js', content: 'module.exports = 1;\n', mode: 0o600 },
  { path: 'lib/deep/er/', type: 'dir', mode: 0o700 },
  { path: 'lib/current', type: 'symlink', linkpath: 'deep/er' },
  { path: 'start', type: 'symlink', linkpath: 'bin/start' },
  { path: 'assets/big.bin', content: Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7919) % 251)) },
  { path: 'assets/empty', content: '' },
  { path: 'assets/naïve-été.txt', content: 'ünïcödé\n', mode: 0o644 },
];

// What the walk at e2453b8 (re-reading every file) returned for gzipTar(makeReleaseTar('web', '1.2.3', ENTRIES)).
const DIGEST_BEFORE = 'sha256-m3KwNc5Esa4SyL7+iXulRyZjlFDzG7ZI65WP+dfwvAE=';

// The canonical listing rebuilt from the extracted tree as it is on disk, the way the earlier walk built it.
function diskDigest(root: string): string {
  const lines: Array<{ key: Buffer; line: string }> = [];
  const stack = [''];
  while (stack.length > 0) {
    const dir = stack.pop() as string;
    for (const name of fs.readdirSync(path.join(root, dir))) {
      const rel = dir ? `${dir}/${name}` : name;
      const abs = path.join(root, rel);
      const st = fs.lstatSync(abs);
      let line: string;
      if (st.isDirectory()) {
        stack.push(rel);
        line = `dir ${JSON.stringify(rel)} ${(st.mode & 0o7777).toString(8)} 0 -`;
      } else if (st.isSymbolicLink()) {
        const target = fs.readlinkSync(abs);
        line = `symlink ${JSON.stringify(rel)} 777 ${Buffer.byteLength(target)} ${JSON.stringify(target)}`;
      } else {
        const hash = createHash('sha256').update(fs.readFileSync(abs)).digest('hex');
        line = `file ${JSON.stringify(rel)} ${(st.mode & 0o7777).toString(8)} ${st.size} ${hash}`;
      }
      lines.push({ key: Buffer.from(rel), line: line + '\n' });
    }
  }
  lines.sort((a, b) => Buffer.compare(a.key, b.key));
  const h = createHash('sha256');
  for (const { line } of lines) h.update(line);
  return 'sha256-' + h.digest('base64');
}

test('the tree digest from the writer equals the earlier walk and the listing of the tree on disk', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const result = await expectExtracts(sb, gzipTar(makeReleaseTar('web', '1.2.3', ENTRIES)));
  assert.equal(result.treeDigest, diskDigest(sb.dest));
  assert.equal(result.treeDigest, DIGEST_BEFORE);
});

// Names whose UTF-16 order differs from their UTF-8 byte order (a character above U+FFFF
// against one of U+E000..U+FFFF), and ASCII names where '/' sorts after '-' and '.'.
for (const [what, names] of [
  ['names beyond U+FFFF beside names of U+E000..U+FFFF', ['a\u{1F600}', 'a\uFF61', 'a\uE000/x', 'a\u{10000}/y', 'b']],
  ['ASCII names with "-", "." and "/"', ['a-b', 'a.b', 'a/b', 'a0', 'ab/c-d', 'ab/c/d']],
] as const) {
  test(`the tree digest sorts by path bytes: ${what}`, async (t) => {
    const sb = await makeSandbox();
    t.after(() => removeSandbox(sb));
    const entries: TarEntrySpec[] = names.map((p) => ({ path: p, content: p }));
    const result = await expectExtracts(sb, gzipTar(makeReleaseTar('web', '1.2.3', entries)));
    assert.equal(result.treeDigest, diskDigest(sb.dest));
  });
}
