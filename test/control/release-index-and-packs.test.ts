import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { parseFileIndex } from '../../src/core/file-index.js';
import { PACK_HEADER_BYTES } from '../../src/core/object-pack.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import { stageRelease } from '../../src/helper/stage/stage-release.js';
import { controlCli, startControlDaemon } from '../helpers/fleet.js';
import { sri } from '../helpers/host.js';
import { hostWithCurrent } from '../helpers/stage-harness.js';
import { releaseOf } from '../helpers/object-releases.js';

// docs/design.md §20: `release add` signs the file index into a second manifest (§20.2), the catalog
// keeps it and the release's files as objects, the control plane serves the index and packs of
// the objects beside the tarball, and a helper stages a second release from them.

const payloadOf = (e: Envelope) => JSON.parse(Buffer.from(e.payload, 'base64').toString()) as Record<string, any>;

function call(url: string, method = 'GET', body?: Buffer | string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers: body ? { 'content-type': 'application/json' } : {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('release add signs the plain manifest and the indexed one and keeps the file index, the control plane serves it and packs, and a host stages the next release from them', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-release-index-'));
  const db = path.join(dir, 'control.db');
  const control = await startControlDaemon(db, 0, 1);
  const s = await hostWithCurrent();
  t.after(async () => {
    await control.stop();
    s.host.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });
  const keys = await controlCli(db, ['keys', 'create', '--out', path.join(dir, 'keys'), '--json']);
  assert.equal(keys.code, 0, keys.stderr);
  const manifests = new Map<string, Envelope>();
  const indexed = new Map<string, Envelope>();
  // The default, and --index (kept for scripts): the same two manifests.
  for (const [v, changed, flags] of [['1.0.0', 'one\n', []], ['1.1.0', 'two\n', ['--index']]] as const) {
    const file = path.join(dir, `web-${v}.tgz`);
    writeFileSync(file, releaseOf(v, changed));
    const add = await controlCli(db, ['release', 'add', 'web', v, '--file', file, '--base-url', control.url, '--key', keys.json.privateKeyFile, ...flags, '--json']);
    assert.equal(add.code, 0, add.stderr);
    assert.equal('index' in add.json.payload, false, 'the plain manifest is exactly what it was before indexes');
    assert.deepEqual(Object.keys(add.json.index).sort(), ['integrity', 'size', 'url']);
    assert.equal(add.json.index.url, `${control.url}/v1/artifacts/web/${v}.index.json`);
    const plain = payloadOf(add.json.manifest);
    const withIndex = payloadOf(add.json.indexedManifest);
    assert.deepEqual(withIndex, { ...plain, index: add.json.index }, 'the indexed manifest is the plain one plus the index');
    assert.equal(add.json.indexedManifest.keyId, add.json.manifest.keyId);
    manifests.set(v, add.json.manifest as Envelope);
    indexed.set(v, add.json.indexedManifest as Envelope);
  }
  // --no-index and --url: the plain manifest alone.
  const other = path.join(dir, 'web-2.0.0.tgz');
  writeFileSync(other, releaseOf('2.0.0', 'three\n'));
  const plainOnly = await controlCli(db, ['release', 'add', 'web', '2.0.0', '--file', other, '--base-url', control.url, '--key', keys.json.privateKeyFile, '--no-index', '--json']);
  assert.equal(plainOnly.code, 0, plainOnly.stderr);
  assert.deepEqual([plainOnly.json.indexedManifest, plainOnly.json.index, 'index' in plainOnly.json.payload], [null, null, false]);
  const elsewhere = await controlCli(db, ['release', 'add', 'web', '2.0.1', '--file', other, '--url', 'https://cdn.example/web-2.0.1.tgz', '--key', keys.json.privateKeyFile, '--json']);
  assert.equal(elsewhere.code, 0, elsewhere.stderr);
  assert.deepEqual([elsewhere.json.indexedManifest, elsewhere.json.index], [null, null]);
  const both = await controlCli(db, ['release', 'add', 'web', '2.0.2', '--file', other, '--url', 'https://cdn.example/web-2.0.2.tgz', '--key', keys.json.privateKeyFile, '--index', '--json']);
  assert.equal(both.code, 2, both.stdout + both.stderr);
  // A file the extractor refuses: the plain manifest alone by default, saying why; refused with --index.
  const junk = path.join(dir, 'junk.tgz');
  writeFileSync(junk, 'not a tarball');
  const skipped = await controlCli(db, ['release', 'add', 'junk', '1.0.0', '--file', junk, '--base-url', control.url, '--key', keys.json.privateKeyFile, '--json']);
  assert.equal(skipped.code, 0, skipped.stderr);
  assert.deepEqual([skipped.json.index, skipped.json.indexedManifest, skipped.json.indexSkipped?.code], [null, null, 'UNSAFE_ARCHIVE']);
  const asked = await controlCli(db, ['release', 'add', 'junk', '1.0.1', '--file', junk, '--base-url', control.url, '--key', keys.json.privateKeyFile, '--index', '--json']);
  assert.notEqual(asked.code, 0);
  assert.equal(asked.json.error.code, 'UNSAFE_ARCHIVE');
  // release list says which releases have an index.
  const list = await controlCli(db, ['release', 'list', 'web', '--json']);
  assert.deepEqual(list.json.releases.map((r: { version: string; index: unknown }) => [r.version, r.index !== null]), [['1.0.0', true], ['1.1.0', true], ['2.0.0', false], ['2.0.1', false]]);
  const table = await controlCli(db, ['release', 'list', 'web']);
  assert.match(table.stdout, /INDEX/);
  // A refresh (same key, fresh expiry) replaces both together; with --no-index it drops the indexed one.
  const again = await controlCli(db, ['release', 'add', 'web', '1.0.0', '--file', path.join(dir, 'web-1.0.0.tgz'), '--base-url', control.url, '--key', keys.json.privateKeyFile, '--expires-days', '30', '--json']);
  assert.equal(again.json.change, 'refreshed');
  assert.equal(payloadOf(again.json.indexedManifest).expires, payloadOf(again.json.manifest).expires);
  const listed = (await controlCli(db, ['release', 'list', 'web', '--json'])).json.releases.find((r: { version: string }) => r.version === '1.0.0');
  assert.deepEqual(listed.indexedManifest, again.json.indexedManifest);
  const dropped = await controlCli(db, ['release', 'add', 'web', '2.0.0', '--file', other, '--base-url', control.url, '--key', keys.json.privateKeyFile, '--json']);
  assert.notEqual(dropped.json.indexedManifest, null, 'a refresh without --no-index makes the indexed one');
  const payload = payloadOf(indexed.get('1.1.0') as Envelope) as { index: { integrity: string; size: number } };
  const gzIndex = await call(`${control.url}/v1/artifacts/web/1.1.0.index.json`);
  assert.equal(gzIndex.status, 200);
  assert.equal(gzIndex.headers['content-type'], 'application/gzip');
  const index = { body: gunzipSync(gzIndex.body) };
  assert.equal(sri(index.body), payload.index.integrity, 'the index served is the one signed');
  assert.equal(index.body.length, payload.index.size);
  const file = parseFileIndex(index.body, { maxEntries: 1000, maxPathBytes: 4096, maxDepth: 64, maxTotalBytes: 1e9 }).find((e) => e.path === 'server.js');
  assert.ok(file && file.type === 'file');
  const gzPack = await call(`${control.url}/v1/artifacts/web/1.1.0.pack`, 'POST', JSON.stringify({ sha256: [file.sha256] }));
  assert.equal(gzPack.status, 200);
  const pack = { body: gunzipSync(gzPack.body) };
  assert.equal(pack.body.length, PACK_HEADER_BYTES + file.size);
  assert.equal(pack.body.subarray(0, 32).toString('hex'), file.sha256);
  assert.equal(createHash('sha256').update(pack.body.subarray(PACK_HEADER_BYTES)).digest('hex'), file.sha256);
  // Refused: a GET of a pack, an object of no file of the release, a body that is not a request.
  assert.equal((await call(`${control.url}/v1/artifacts/web/1.1.0.pack`)).status, 405);
  assert.equal((await call(`${control.url}/v1/artifacts/web/1.1.0.pack`, 'POST', JSON.stringify({ sha256: ['0'.repeat(64)] }))).status, 400);
  assert.equal((await call(`${control.url}/v1/artifacts/web/1.1.0.pack`, 'POST', '{"sha256":"x"}')).status, 400);
  assert.equal((await call(`${control.url}/v1/artifacts/web/9.9.9.index.json`)).status, 404);

  // A host that trusts the release key stages 1.0.0 (the tarball: it has none of it) and 1.1.0
  // from its index and a pack of what it lacks.
  const trustDir = path.join(s.host.paths.trustedKeysDir, 'web');
  mkdirSync(trustDir, { recursive: true, mode: 0o755 });
  const pub = readdirSync(path.join(dir, 'keys')).find((n) => n.endsWith('.pub')) as string;
  copyFileSync(path.join(dir, 'keys', pub), path.join(trustDir, pub));
  const first = await stageRelease(s.deps, { kind: 'helper', app: 'web', version: '1.0.0', manifest: manifests.get('1.0.0') as Envelope, indexedManifest: indexed.get('1.0.0') as Envelope });
  assert.equal(first.via, 'tarball');
  const second = await stageRelease(s.deps, { kind: 'helper', app: 'web', version: '1.1.0', manifest: manifests.get('1.1.0') as Envelope, indexedManifest: indexed.get('1.1.0') as Envelope });
  assert.equal(second.via, 'objects', JSON.stringify(second.fallback));
  assert.ok(first.fallback?.code === null, JSON.stringify(first.fallback));
  assert.ok((second.fetchedBytes ?? Infinity) < (second.reusedBytes ?? 0) / 10, `fetched ${second.fetchedBytes}, reused ${second.reusedBytes}`);

  // The control plane keeps the last indexes it parsed for packs (packs.ts): a version removed and
  // added again with other files is answered from its new index, never the one it parsed before.
  const removed = await controlCli(db, ['release', 'remove', 'web', '1.1.0', '--json']);
  assert.equal(removed.code, 0, removed.stderr);
  const redone = path.join(dir, 'web-1.1.0-again.tgz');
  writeFileSync(redone, releaseOf('1.1.0', 'two, made again\n'));
  const readd = await controlCli(db, ['release', 'add', 'web', '1.1.0', '--file', redone, '--base-url', control.url, '--key', keys.json.privateKeyFile, '--json']);
  assert.equal(readd.code, 0, readd.stderr);
  const newIndex = parseFileIndex(gunzipSync((await call(`${control.url}/v1/artifacts/web/1.1.0.index.json`)).body), { maxEntries: 1000, maxPathBytes: 4096, maxDepth: 64, maxTotalBytes: 1e9 });
  const newFile = newIndex.find((e) => e.path === 'server.js');
  assert.ok(newFile && newFile.type === 'file' && newFile.sha256 !== file.sha256);
  assert.equal((await call(`${control.url}/v1/artifacts/web/1.1.0.pack`, 'POST', JSON.stringify({ sha256: [file.sha256] }))).status, 400, 'the old file is no file of the release now');
  const newPack = await call(`${control.url}/v1/artifacts/web/1.1.0.pack`, 'POST', JSON.stringify({ sha256: [newFile.sha256] }));
  assert.equal(newPack.status, 200);
  assert.equal(gunzipSync(newPack.body).subarray(0, 32).toString('hex'), newFile.sha256);
});
