import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promises as fsp, readdirSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { StewardError } from '../../src/core/errors.js';
import { extractArchive, KEEP_WARM_MS, prepareExtraction } from '../../src/platform/tarball.js';
import { DEFAULT_LIMITS, expectExtracts, expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { hostileArchive, manyFiles } from '../fixtures/hostile-archives.js';
import { gzipTar, makeReleaseTar, makeTar } from '../fixtures/tar-writer.js';

test('a release extracts with its contents, counts and a sha256 tree digest', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tar = makeReleaseTar('web', '1.0.0', [
    { path: './server.js', content: 'console.log("hi")\n' },
    { path: './lib/', type: 'dir' },
    { path: './lib/a.js', content: 'a' },
    { path: './lib/b.js', content: 'bb' },
  ]);
  const r = await expectExtracts(sb, gzipTar(tar));
  assert.equal(r.entries, 5);
  assert.equal(r.bytes, (await fsp.stat(path.join(sb.dest, 'steward-release.json'))).size + 18 + 1 + 2);
  assert.match(r.treeDigest, /^sha256-[A-Za-z0-9+/]{43}=$/);
  assert.equal(await fsp.readFile(path.join(sb.dest, 'lib/b.js'), 'utf8'), 'bb');
  assert.equal(JSON.parse(await fsp.readFile(path.join(sb.dest, 'steward-release.json'), 'utf8')).version, '1.0.0');
});

for (const format of ['gnu', 'pax']) {
  test(`an archive made by GNU tar (${format} format, long names, a "./" root entry) extracts and leaves dest at 0700`, async (t) => {
    const sb = await makeSandbox();
    t.after(() => removeSandbox(sb));
    const src = path.join(sb.root, 'src');
    const long = 'very-long-folder-name-'.repeat(6);
    await fsp.mkdir(path.join(src, 'bin', long), { recursive: true });
    await fsp.writeFile(path.join(src, 'steward-release.json'), '{}');
    await fsp.writeFile(path.join(src, 'bin', 'run'), '#!/bin/sh\n', { mode: 0o755 });
    await fsp.writeFile(path.join(src, 'bin', long, 'file.txt'), 'deep');
    await fsp.symlink('bin/run', path.join(src, 'run'));
    await fsp.symlink(`bin/${long}/file.txt`, path.join(src, 'long-link'));
    await fsp.chmod(src, 0o777);
    execFileSync('tar', [`--format=${format}`, '-czf', sb.archive, '-C', src, '.']);
    const r = await extractArchive({ archivePath: sb.archive, dest: sb.dest, limits: DEFAULT_LIMITS });
    assert.equal(r.entries, 7);
    assert.equal((await fsp.lstat(sb.dest)).mode & 0o7777, 0o700);
    assert.equal((await fsp.lstat(path.join(sb.dest, 'bin/run'))).mode & 0o7777, 0o555);
    assert.equal(await fsp.readlink(path.join(sb.dest, 'run')), 'bin/run');
    assert.equal(await fsp.readFile(path.join(sb.dest, 'long-link'), 'utf8'), 'deep');
  });
}

test('a dangling symlink that stays inside the tree is accepted', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectExtracts(sb, gzipTar(makeReleaseTar('web', '1.0.0', [{ path: 'conf/current', type: 'symlink', linkpath: '../missing/file' }])));
  assert.equal(await fsp.readlink(path.join(sb.dest, 'conf/current')), '../missing/file');
});

test('a dest that already exists is refused without touching it', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await fsp.mkdir(sb.dest);
  await fsp.writeFile(sb.archive, gzipTar(makeReleaseTar('web', '1.0.0')));
  await assert.rejects(extractArchive({ archivePath: sb.archive, dest: sb.dest, limits: DEFAULT_LIMITS }), (err: unknown) => {
    assert.ok(err instanceof StewardError);
    assert.equal(err.code, 'IO_ERROR');
    assert.match(err.message, /EEXIST/);
    return true;
  });
  assert.deepEqual(await fsp.readdir(sb.dest), []);
});

test('a missing archive file is an IO_ERROR', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await assert.rejects(extractArchive({ archivePath: sb.archive, dest: sb.dest, limits: DEFAULT_LIMITS }), { code: 'IO_ERROR' });
});

test('the path length and depth limits come from the limits given', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await expectRefused(sb, gzipTar(makeReleaseTar('web', '1.0.0', [{ path: 'a/b/c/d.txt', content: 'x' }])), /path is deeper than 3 folders \(4\)/, { maxDepth: 3 });
  const sb2 = await makeSandbox();
  t.after(() => removeSandbox(sb2));
  await expectRefused(sb2, gzipTar(makeReleaseTar('web', '1.0.0', [{ path: 'x'.repeat(65), content: 'x' }])), /path is longer than 64 bytes/, { maxPathLength: 64 });
});

test('progress is reported while a large archive extracts and the main thread keeps ticking', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const entries = [...manyFiles(3000), { path: 'big.bin', content: randomBytes(4 * 1024 * 1024) }];
  await fsp.writeFile(sb.archive, gzipTar(makeTar(entries)));
  const progress: Array<{ entries: number; bytes: number }> = [];
  let ticks = 0;
  let longestGap = 0;
  let last = Date.now();
  const timer = setInterval(() => {
    ticks++;
    longestGap = Math.max(longestGap, Date.now() - last);
    last = Date.now();
  }, 10);
  const started = Date.now();
  let r;
  try {
    r = await extractArchive({ archivePath: sb.archive, dest: sb.dest, limits: DEFAULT_LIMITS, onProgress: (p) => progress.push(p) });
  } finally {
    clearInterval(timer);
  }
  const elapsed = Date.now() - started;
  assert.equal(r.entries, 3001 + 3);
  assert.ok(progress.length >= 1, 'at least the final progress report arrived');
  assert.deepEqual(progress.at(-1), { entries: 3001, bytes: 4 * 1024 * 1024 });
  for (let i = 1; i < progress.length; i++) assert.ok((progress[i]?.entries ?? 0) >= (progress[i - 1]?.entries ?? 0), 'progress never goes back');
  // The interval ran throughout: roughly one tick per 10 ms and no pause of a blocked event loop.
  assert.ok(ticks >= elapsed / 10 / 4, `ticks=${ticks} over ${elapsed} ms`);
  assert.ok(longestGap < 500, `the longest gap between ticks was ${longestGap} ms`);
});

test('an abort terminates the worker and rejects with the abort reason', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await fsp.writeFile(sb.archive, gzipTar(makeTar(manyFiles(3000))));
  const ac = new AbortController();
  // Aborting on the first progress report (at the latest the final one, always before 'done').
  const onProgress = (): void => ac.abort(new Error('stop now'));
  const pending = extractArchive({ archivePath: sb.archive, dest: sb.dest, limits: DEFAULT_LIMITS, signal: ac.signal, onProgress });
  await assert.rejects(pending, /stop now/);
});

test('an already aborted signal starts nothing', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await fsp.writeFile(sb.archive, gzipTar(makeReleaseTar('web', '1.0.0')));
  await assert.rejects(extractArchive({ archivePath: sb.archive, dest: sb.dest, limits: DEFAULT_LIMITS, signal: AbortSignal.abort() }), { name: 'AbortError' });
  await assert.rejects(fsp.lstat(sb.dest), { code: 'ENOENT' });
});

test('a prepared extraction that never gets its job ends its thread on cancel', async () => {
  // Takes and ends a worker an earlier test left warm, if any, so that the next one is new.
  await prepareExtraction().cancel();
  const threads = (): number => readdirSync('/proc/self/task').length;
  const before = threads();
  const prepared = prepareExtraction();
  assert.equal(threads(), before + 1, 'the worker thread runs from the start');
  await prepared.cancel();
  assert.equal(threads(), before, 'the worker thread is gone');
});

test('a worker whose job ended cleanly takes the next job, and ends once it waited KEEP_WARM_MS', async (t) => {
  const a = await makeSandbox();
  const b = await makeSandbox();
  t.after(() => Promise.all([a, b].map(removeSandbox)));
  await fsp.writeFile(a.archive, gzipTar(makeReleaseTar('web', '1.0.0')));
  await fsp.writeFile(b.archive, gzipTar(makeReleaseTar('web', '1.0.1')));
  const tasks = (): Set<string> => new Set(readdirSync('/proc/self/task'));
  const before = tasks();
  await extractArchive({ archivePath: a.archive, dest: a.dest, limits: DEFAULT_LIMITS });
  const kept = [...tasks()].filter((id) => !before.has(id));
  assert.equal(kept.length, 1, 'one worker thread waits for the next job');
  const prepared = prepareExtraction();
  assert.deepEqual([...tasks()].filter((id) => !before.has(id)), kept, 'the next extraction starts no thread: it has the warm one');
  await prepared.extract({ archivePath: b.archive, dest: b.dest, limits: DEFAULT_LIMITS });
  assert.equal(JSON.parse(await fsp.readFile(path.join(b.dest, 'steward-release.json'), 'utf8')).version, '1.0.1');
  // Ended after KEEP_WARM_MS idle (polled: how soon it goes is the timer's, not asserted).
  const deadline = Date.now() + KEEP_WARM_MS + 30_000;
  while (tasks().has(kept[0] as string) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  assert.ok(!tasks().has(kept[0] as string), 'the idle worker ended');
});

test('files get their final modes under a umask that takes bits of them (077)', async (t) => {
  const sb = await makeSandbox();
  const old = process.umask(0o077);
  t.after(() => {
    process.umask(old);
    return removeSandbox(sb);
  });
  const tar = makeReleaseTar('web', '1.0.0', [
    { path: 'bin/start', content: '#!/bin/sh\n', mode: 0o700 },
    { path: 'lib/a.js', content: 'a', mode: 0o600 },
  ]);
  await expectExtracts(sb, gzipTar(tar));
  assert.equal((await fsp.stat(path.join(sb.dest, 'bin/start'))).mode & 0o7777, 0o555);
  assert.equal((await fsp.stat(path.join(sb.dest, 'lib/a.js'))).mode & 0o7777, 0o444);
});

// An archive given in memory (staging's path for local files and uploads up to
// ARCHIVE_IN_MEMORY_MAX_BYTES): transferred to the worker, gunzipped from memory, held to
// the same checks as an archive file.
test('an archive given in memory extracts like the same archive file, and its Buffer is taken from the caller', async (t) => {
  const fromFile = await makeSandbox();
  const fromMemory = await makeSandbox();
  t.after(() => Promise.all([removeSandbox(fromFile), removeSandbox(fromMemory)]));
  const tgz = gzipTar(makeReleaseTar('web', '1.0.0', [{ path: 'server.js', content: 'hi\n' }, ...manyFiles(300)]));
  const viaFile = await expectExtracts(fromFile, tgz);
  const archive = Buffer.allocUnsafeSlow(tgz.length);
  tgz.copy(archive);
  const viaMemory = await extractArchive({ archive, dest: fromMemory.dest, limits: DEFAULT_LIMITS });
  assert.deepEqual({ ...viaMemory, integrity: 'x' }, { ...viaFile, integrity: 'x' });
  assert.equal(viaMemory.integrity, null, 'nothing was read back, so nothing was hashed again');
  assert.match(viaFile.integrity ?? '', /^sha512-/);
  assert.equal(archive.byteLength, 0, 'the Buffer was transferred (detached here), not copied');
  assert.equal(await fsp.readFile(path.join(fromMemory.dest, 'server.js'), 'utf8'), 'hi\n');
});

test('an archive given in memory is held to the gzip magic, the ratio cap (of its compressed size) and the gzip checks', async (t) => {
  for (const [name, archive, pattern] of [
    ['not gzip', Buffer.from('PK\x03\x04 not a gzip file'), /not a gzip file/],
    ['empty', Buffer.alloc(0), /not a gzip file/],
    ['gzip bomb', hostileArchive('gzip-bomb').build(), /more than 200 times its size \(gzip bomb\)/],
    ['truncated', hostileArchive('truncated').build(), /corrupt or truncated|truncated/],
  ] as const) {
    const sb = await makeSandbox();
    t.after(() => removeSandbox(sb));
    await assert.rejects(extractArchive({ archive, dest: sb.dest, limits: DEFAULT_LIMITS }), (err: unknown) => {
      assert.ok(err instanceof StewardError, `${name}: ${String(err)}`);
      assert.equal(err.code, 'UNSAFE_ARCHIVE', `${name}: ${err.message}`);
      assert.match(err.message, pattern, name);
      return true;
    });
  }
});

// Under Node 24 a transfer of a pool's ArrayBuffer throws DataCloneError; under Node 20 it copies.
test("a small Buffer from Node's pool is copied for the worker, never put in the transfer list", async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const tgz = gzipTar(makeReleaseTar('web', '1.0.0', [{ path: 'a', content: 'a' }]));
  // Two small Buffers from the same pool slab (a new slab may begin between two of them).
  let neighbour = Buffer.from('neighbour');
  let pooled = Buffer.from(tgz);
  for (let i = 0; i < 10 && pooled.buffer !== neighbour.buffer; i++) {
    neighbour = Buffer.from('neighbour');
    pooled = Buffer.from(tgz);
  }
  assert.equal(pooled.buffer, neighbour.buffer, 'both come from the pool (the fixture is small)');
  await extractArchive({ archive: pooled, dest: sb.dest, limits: DEFAULT_LIMITS });
  assert.equal(neighbour.toString(), 'neighbour');
  assert.equal(pooled.length, tgz.length);
});
