import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { encodeFileIndex, parseFileIndex } from '../../src/core/file-index.js';
import { PackReader, packBytes, packHeader } from '../../src/core/object-pack.js';
import { treeDigestOf, type TreeEntry } from '../../src/core/tree-listing.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const LIMITS = { maxEntries: 100, maxPathBytes: 4096, maxDepth: 64, maxTotalBytes: 1e6 };
const ENTRIES: TreeEntry[] = [
  { path: 'steward-release.json', type: 'file', mode: 0o444, size: 2, sha256: sha('{}') },
  { path: 'bin', type: 'dir', mode: 0o555, size: 0 },
  { path: 'bin/run', type: 'file', mode: 0o555, size: 3, sha256: sha('abc') },
  { path: 'bin/here', type: 'symlink', mode: 0o777, size: 3, target: 'run' },
  { path: 'é', type: 'file', mode: 0o444, size: 0, sha256: sha('') },
];

test('an index encodes canonically, parses back to its entries, and keeps the tree digest', () => {
  const bytes = encodeFileIndex(ENTRIES);
  assert.deepEqual(encodeFileIndex([...ENTRIES].reverse()), bytes, 'the order given does not matter');
  const parsed = parseFileIndex(bytes, LIMITS);
  assert.equal(treeDigestOf(parsed), treeDigestOf(ENTRIES));
  assert.deepEqual(new Set(parsed.map((e) => JSON.stringify(e))), new Set(ENTRIES.map((e) => JSON.stringify(e))));
  assert.equal(JSON.stringify(JSON.parse(bytes.toString())), bytes.toString(), 'no whitespace');
});

test('an index in any order, with paths of any script, parses to the same entries', () => {
  const sorted = parseFileIndex(encodeFileIndex(ENTRIES), LIMITS);
  const shuffled = Buffer.from(JSON.stringify({ entries: JSON.parse(encodeFileIndex(ENTRIES).toString()).entries.reverse(), v: 1 }));
  assert.deepEqual(new Set(parseFileIndex(shuffled, LIMITS).map((e) => JSON.stringify(e))), new Set(sorted.map((e) => JSON.stringify(e))));
  const long = { path: `${'ü'.repeat(127)}/${'a'.repeat(255)}`, type: 'file' as const, mode: 0o444, size: 0, sha256: sha('') };
  const parsed = parseFileIndex(encodeFileIndex([...ENTRIES, { path: 'ü'.repeat(127), type: 'dir', mode: 0o555, size: 0 }, long]), LIMITS);
  assert.ok(parsed.some((e) => e.path === long.path), 'a 254-byte component of 127 characters and a 255-byte one are taken');
});

test('an index that breaks a rule is refused UNSAFE_ARCHIVE with the rule', () => {
  const bad = (entries: unknown[], v: unknown = 1) => Buffer.from(JSON.stringify({ entries, v }));
  const file = { mode: 0o444, path: 'a', sha256: sha('x'), size: 1, type: 'file' };
  const cases: Array<[Buffer, RegExp]> = [
    [Buffer.from('nope'), /not JSON/],
    [bad([file], 2), /version 2/],
    [bad([file, file]), /listed twice/],
    // Out of order (accepted) and then listed again: the sorted fast path must not miss it.
    [bad([{ ...file, path: 'b' }, file, { ...file, path: 'c' }, { ...file, path: 'b' }]), /"b" is listed twice/],
    [bad([{ ...file, path: 'a/b' }]), /no folder "a" listed/],
    [bad([file, { ...file, path: 'a/b' }]), /no folder "a" listed/],
    [bad([{ ...file, path: '/a' }]), /absolute path/],
    [bad([{ ...file, path: 'a/' }]), /empty component/],
    [bad([{ ...file, path: '..' }]), /"\.\." component/],
    [bad([{ ...file, path: 'x/../y' }]), /"\.\." component/],
    [bad([{ ...file, path: 'a\u0000b' }]), /NUL/],
    [bad([{ ...file, path: 'é/..' }]), /"\.\." component/],
    [bad([{ ...file, path: Array.from({ length: 65 }, () => 'd').join('/') }]), /deeper than 64/],
    [bad([{ ...file, path: 'p'.repeat(4097) }]), /longer than 4096 bytes/],
    [bad([{ ...file, path: 'é'.repeat(2049) }]), /longer than 4096 bytes/],
    [bad([{ ...file, path: 'q'.repeat(256) }]), /component longer than 255/],
    [bad([{ ...file, sha256: sha('x').toUpperCase() }]), /no sha256/],
    [bad([{ ...file, sha256: sha('x').slice(1) }]), /no sha256/],
    [bad([{ ...file, mode: 0o644 }]), /mode 420/],
    [bad([{ ...file, mode: 0o4555 }]), /mode/],
    [bad([{ ...file, path: 'a/./b' }]), /"\." component/],
    [bad([{ ...file, path: 'a//b' }]), /empty component/],
    [bad([{ ...file, path: '.steward-valid' }]), /marker/],
    [bad([{ ...file, extra: 1 }]), /has keys/],
    [bad([{ mode: 0o555, path: 'd', size: 1, type: 'dir' }]), /folder/],
    [bad([{ path: 'dev', type: 'char', mode: 0o444, size: 0 }]), /only files, folders and symlinks/],
    [bad([{ mode: 0o777, path: 's', size: 4, target: '/etc', type: 'symlink' }]), /absolute/],
    [bad([{ ...file, size: 2e6 }]), /bad size|more than/],
    [bad(Array.from({ length: 101 }, (_, i) => ({ ...file, path: `f${i}` }))), /101 entries/],
  ];
  for (const [bytes, message] of cases) {
    assert.throws(() => parseFileIndex(bytes, LIMITS), (err: Error & { code?: string }) => err.code === 'UNSAFE_ARCHIVE' && message.test(err.message), `${bytes.toString().slice(0, 80)} -> ${message}`);
  }
});

test('a pack read in chunks of any size gives each object asked, and refuses anything else', async () => {
  const objects = ['', 'hello', 'x'.repeat(1000)].map((s) => ({ sha256: sha(s), size: Buffer.byteLength(s), body: Buffer.from(s) }));
  const pack = Buffer.concat(objects.flatMap((o) => [packHeader(o.sha256, o.size), o.body]));
  assert.equal(pack.length, packBytes(objects.map((o) => o.size)));
  for (const chunk of [1, 7, 40, 41, 4096]) {
    const got: Buffer[] = [];
    let cur: Buffer[] = [];
    const reader = new PackReader(objects, { start: async () => void (cur = []), data: async (c) => void cur.push(Buffer.from(c)), end: async () => void got.push(Buffer.concat(cur)) });
    for (let i = 0; i < pack.length; i += chunk) await reader.push(pack.subarray(i, i + chunk));
    reader.finish();
    assert.deepEqual(got.map(String), objects.map((o) => o.body.toString()), `chunks of ${chunk}`);
  }
  const sink = { start: async () => {}, data: async () => {}, end: async () => {} };
  const swapped = Buffer.concat([packHeader(objects[1]!.sha256, 5), Buffer.from('hello')]);
  await assert.rejects(new PackReader(objects, sink).push(swapped), /record 1 is/);
  const longer = new PackReader(objects.slice(0, 1), sink);
  await assert.rejects(longer.push(Buffer.concat([pack, Buffer.alloc(1)])), /more than the objects asked/);
  const short = new PackReader(objects, sink);
  await short.push(pack.subarray(0, pack.length - 1));
  assert.throws(() => short.finish(), /ended after 2 of 3/);
});
