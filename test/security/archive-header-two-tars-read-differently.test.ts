// Headers crafted so that GNU tar and node-tar read a different entry from the same bytes:
// the scanner reads every header as GNU tar does and the feed holds node-tar's reading of each
// entry to it, so the archive is refused, named by the entry, whatever trick made them differ.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { removeTree } from '../../src/platform/fs-atomic.js';
import { expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { gzipTar, makeReleaseTar, makeTar, tarHeader } from '../fixtures/tar-writer.js';

// A ustar header whose magic is "ustar\0" but whose version is not "00": GNU tar reads its
// prefix field ("pre/a.txt"), node-tar does not ("a.txt").
function prefixedHeader(): Buffer {
  const b = tarHeader({ name: 'a.txt', typeflag: '0', size: 0 });
  b.write('pre', 345, 'latin1');
  b.write('xx', 263, 2, 'latin1');
  b.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of b) sum += byte;
  b.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8, 'latin1');
  return b;
}

test('an entry whose path GNU tar and node-tar read differently (a ustar prefix node-tar skips) is refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = Buffer.concat([makeReleaseTar('web', '1.0.0', [], { noEndBlocks: true }), prefixedHeader(), Buffer.alloc(1024)]);
  // What GNU tar makes of it: the prefix is part of the name.
  const gnu = mkdtempSync(path.join(os.tmpdir(), 'steward-gnu-'));
  t.after(() => removeTree(gnu));
  writeFileSync(path.join(gnu, 'in.tar'), tar);
  execFileSync('tar', ['-xf', 'in.tar'], { cwd: gnu });
  assert.deepEqual(readdirSync(path.join(gnu, 'pre')), ['a.txt']);
  await expectRefused(sb, gzipTar(tar), /entry "a\.txt": the tar headers are ambiguous \(GNU tar would read its path "pre\/a\.txt"\)/);
});

test('two pax headers in a row for one entry are refused', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeTar([
    { path: 'steward-release.json', content: '{}' },
    { path: 'PaxHeader/a', type: 'pax', pax: { path: 'first.txt' } },
    { path: 'PaxHeader/b', type: 'pax', pax: { mtime: '1700000000' } },
    { path: 'a.txt', content: 'a' },
  ]);
  await expectRefused(sb, gzipTar(tar), /entry "first\.txt": two pax headers in a row for one entry/);
});

test('a header node-tar refuses itself (a regular file with a link target) is refused, named by the entry', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const head = makeReleaseTar('web', '1.0.0', [], { noEndBlocks: true });
  const file = tarHeader({ name: 'odd.txt', typeflag: '0', size: 0, linkname: 'elsewhere' });
  await expectRefused(sb, gzipTar(Buffer.concat([head, file, Buffer.alloc(1024)])), /entry "odd\.txt": node-tar refused it: TAR_ENTRY_INVALID: linkpath forbidden/);
});
