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

// docs/design.md §20: `release add --index` signs the file index into the manifest, the catalog keeps
// it and the release's files as objects, the control plane serves the index and packs of the
// objects beside the tarball, and a helper stages a second release from them.

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

test('release add --index signs and keeps the file index, the control plane serves it and packs, and a host stages the next release from them', async (t) => {
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
  for (const [v, changed] of [['1.0.0', 'one\n'], ['1.1.0', 'two\n']] as const) {
    const file = path.join(dir, `web-${v}.tgz`);
    writeFileSync(file, releaseOf(v, changed));
    const add = await controlCli(db, ['release', 'add', 'web', v, '--file', file, '--base-url', control.url, '--key', keys.json.privateKeyFile, '--index', '--json']);
    assert.equal(add.code, 0, add.stderr);
    assert.deepEqual(Object.keys(add.json.payload.index).sort(), ['integrity', 'size', 'url']);
    assert.equal(add.json.payload.index.url, `${control.url}/v1/artifacts/web/${v}.index.json`);
    manifests.set(v, add.json.manifest as Envelope);
  }
  const payload = JSON.parse(Buffer.from((manifests.get('1.1.0') as Envelope).payload, 'base64').toString()) as { index: { integrity: string; size: number } };
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
  const first = await stageRelease(s.deps, { kind: 'helper', app: 'web', version: '1.0.0', manifest: manifests.get('1.0.0') as Envelope });
  assert.equal(first.via, 'tarball');
  const second = await stageRelease(s.deps, { kind: 'helper', app: 'web', version: '1.1.0', manifest: manifests.get('1.1.0') as Envelope });
  assert.equal(second.via, 'objects', JSON.stringify(second.fallback));
  assert.ok(first.fallback?.code === null, JSON.stringify(first.fallback));
  assert.ok((second.fetchedBytes ?? Infinity) < (second.reusedBytes ?? 0) / 10, `fetched ${second.fetchedBytes}, reused ${second.reusedBytes}`);
});
