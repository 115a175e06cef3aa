import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { test } from 'node:test';
import zlib from 'node:zlib';
import { decompressSync, hasZstd } from '../../src/core/compression.js';
import { parseFileIndex } from '../../src/core/file-index.js';
import { gzipBound, packBytes, packHeader } from '../../src/core/object-pack.js';
import { startObjectServer, type ObjectServer } from '../helpers/object-server.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

// docs/design.md §20.5: the catalog keeps each object's pack record compressed (gzip, and zstd
// where its runtime has it) and answers a pack by concatenating them; the index likewise. A
// helper from before (Accept-Encoding: identity) still gets one gzip stream within gzipBound.
function post(srv: ObjectServer, url: string, body: Buffer, accept: string): Promise<{ status: number; type: string; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${srv.base}${url}`, { method: url.endsWith('.pack') ? 'POST' : 'GET', headers: { 'accept-encoding': accept, 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(url.endsWith('.pack') ? body : undefined);
  });
}

async function published(files: Array<{ path: string; content: string | Buffer }>): Promise<{ srv: ObjectServer; want: Array<{ sha256: string; size: number; bytes: Buffer }> }> {
  const srv = await startObjectServer();
  const index = await srv.publish('1.0.0', gzipTar(makeReleaseTar('web', '1.0.0', files)));
  const raw = decompressSync((await post(srv, '/v1/artifacts/web/1.0.0.index.json', Buffer.alloc(0), 'gzip')).body, index.size, 'the index');
  const entries = parseFileIndex(raw, { maxEntries: 1000, maxPathBytes: 4096, maxDepth: 64, maxTotalBytes: 1 << 30 });
  const want = new Map<string, { sha256: string; size: number; bytes: Buffer }>();
  for (const e of entries) if (e.type === 'file' && !want.has(e.sha256)) want.set(e.sha256, { sha256: e.sha256, size: e.size, bytes: Buffer.from(files.find((f) => f.path === e.path)?.content ?? '') });
  return { srv, want: [...want.values()].filter((w) => w.bytes.length === w.size) };
}

const packOf = (want: ReadonlyArray<{ sha256: string; size: number; bytes: Buffer }>): Buffer => Buffer.concat(want.flatMap((w) => [packHeader(w.sha256, w.size), w.bytes]));
const ask = (want: ReadonlyArray<{ sha256: string }>): Buffer => Buffer.from(JSON.stringify({ sha256: want.map((w) => w.sha256) }));

test('the catalog keeps each object\'s record and the index compressed, gzip always and zstd where the runtime has it', async (t) => {
  const { srv, want } = await published([{ path: 'a.js', content: 'a'.repeat(5000) }, { path: 'b.bin', content: randomBytes(3000) }]);
  t.after(() => srv.close());
  const objects = readdirSync(path.join(srv.artifactsDir, 'web', 'objects'));
  for (const w of want) {
    assert.ok(objects.includes(`${w.sha256}.rec.gz`), 'a gzip record');
    assert.equal(objects.includes(`${w.sha256}.rec.zst`), hasZstd(), 'a zstd record exactly where the runtime has zstd');
  }
  assert.ok(existsSync(path.join(srv.artifactsDir, 'web', '1.0.0.index.json.gz')));
  assert.equal(existsSync(path.join(srv.artifactsDir, 'web', '1.0.0.index.json.zst')), hasZstd());
  assert.ok(!objects.some((n) => n.endsWith('.tmp')), 'no temporary name left');
});

test('a pack is the concatenation of the records: gzip for gzip and for an old helper\'s identity, zstd when asked on a runtime that has it', async (t) => {
  const { srv, want } = await published([{ path: 'a.js', content: 'a'.repeat(5000) }, { path: 'b.bin', content: randomBytes(3000) }, { path: 'c.txt', content: 'hello\n'.repeat(300) }]);
  t.after(() => srv.close());
  const pack = packOf(want);
  for (const [accept, type] of [
    ['identity', 'application/gzip'],
    ['gzip', 'application/gzip'],
    ['zstd, gzip', hasZstd() ? 'application/zstd' : 'application/gzip'],
    ['zstd;q=0, gzip', 'application/gzip'],
  ] as const) {
    const r = await post(srv, '/v1/artifacts/web/1.0.0.pack', ask(want), accept);
    assert.equal(r.status, 200);
    assert.equal(r.type, type, accept);
    // What a helper from before §20.5 does with it: gunzip (several members read as one stream).
    const got = type === 'application/gzip' ? zlib.gunzipSync(r.body) : decompressSync(r.body, pack.length, 'the pack');
    assert.deepEqual(got, pack, accept);
    if (accept === 'identity') assert.ok(r.body.length <= gzipBound(packBytes(want.map((w) => w.size))));
  }
});

test('records missing for objects kept by an earlier version are made once, durably, on the first pack that needs them', async (t) => {
  const { srv, want } = await published([{ path: 'a.js', content: 'a'.repeat(5000) }, { path: 'b.js', content: 'b'.repeat(7000) }]);
  t.after(() => srv.close());
  const objects = path.join(srv.artifactsDir, 'web', 'objects');
  for (const n of readdirSync(objects)) if (n.includes('.rec.')) rmSync(path.join(objects, n));
  rmSync(path.join(srv.artifactsDir, 'web', '1.0.0.index.json.gz'));
  const r = await post(srv, '/v1/artifacts/web/1.0.0.pack', ask(want), 'gzip');
  assert.deepEqual(zlib.gunzipSync(r.body), packOf(want));
  for (const w of want) assert.ok(existsSync(path.join(objects, `${w.sha256}.rec.gz`)));
  const idx = await post(srv, '/v1/artifacts/web/1.0.0.index.json', Buffer.alloc(0), 'gzip');
  assert.equal(idx.status, 200);
  assert.ok(existsSync(path.join(srv.artifactsDir, 'web', '1.0.0.index.json.gz')));
});

test('an old helper asking for many tiny objects, whose records would pass its gzipBound, gets one gzip stream within it', async (t) => {
  const files = Array.from({ length: 200 }, (_, i) => ({ path: `t/${i}`, content: randomBytes(4) }));
  const { srv, want } = await published(files);
  t.after(() => srv.close());
  const bound = gzipBound(packBytes(want.map((w) => w.size)));
  const fromGzipHelper = await post(srv, '/v1/artifacts/web/1.0.0.pack', ask(want), 'gzip');
  assert.ok(fromGzipHelper.body.length > bound, `the concatenated records (${fromGzipHelper.body.length}) pass the old bound (${bound}): the case is real`);
  const r = await post(srv, '/v1/artifacts/web/1.0.0.pack', ask(want), 'identity');
  assert.ok(r.body.length <= bound, `${r.body.length} <= ${bound}`);
  assert.deepEqual(zlib.gunzipSync(r.body), packOf(want));
});
