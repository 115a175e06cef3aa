// The steward-control CLI as a real child process against a real database and a real `serve`.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createPublicKey } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { manifestPayloadSchema } from '../../src/core/release-schemas.js';
import { DOMAINS, keyIdOf, openEnvelope } from '../../src/platform/keys.js';
import { REPO } from '../helpers/host.js';
import { STORE_SCHEMA_VERSION } from '../../src/control/store/sqlite/schema.js';
import { FakeNode, request } from '../helpers/control-harness.js';
import { skipUnlessCI } from '../helpers/skip.js';
import { hasOpenssl, selfSignedCert } from '../helpers/tls-cert.js';

const BIN = path.join(REPO, 'bin', 'steward-control.js');
let dir = '';
let db = '';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

// Runs steward-control with --db and returns its exit code and output (stdout parsed when --json).
function cli(...args: string[]): Promise<Run> {
  return cliOn(db, ...args);
}

function cliOn(file: string, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, '--db', file, ...args], { env: { ...process.env, DEBUG: '' } }, (err, stdout, stderr) => {
      const code = err ? ((err as { code?: number }).code ?? 1) : 0;
      let json: unknown = null;
      if (args.includes('--json')) json = JSON.parse(stdout);
      resolve({ code: typeof code === 'number' ? code : 1, stdout, stderr, json });
    });
  });
}

// Starts `serve` and resolves with its URL once it prints its listening line.
function serve(...args: string[]): Promise<{ child: ChildProcess; url: string; stop(): Promise<number | null> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, '--db', db, 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let errText = '';
    child.stderr?.on('data', (d: Buffer) => (errText += d.toString()));
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n')[0] ?? '';
      if (!out.includes('\n')) return;
      const m = /^steward-control listening on (\S+)$/.exec(line);
      const url = m ? m[1] : (JSON.parse(line) as { listening: string }).listening;
      const stop = () =>
        new Promise<number | null>((res) => {
          child.once('exit', (code) => res(code));
          child.kill('SIGTERM');
        });
      resolve({ child, url: url as string, stop });
    });
    child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${errText}`)));
  });
}

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'steward-control-cli-'));
  db = path.join(dir, 'control.db');
  const init = await cli('init', '--json');
  assert.deepEqual([init.code, init.json.created, init.json.db], [0, true, db], init.stderr);
});
after(() => rmSync(dir, { recursive: true, force: true }));

test('a database that does not exist is refused by every command but init, which creates it', async () => {
  const missing = path.join(dir, 'typo.db');
  for (const args of [['nodes'], ['token', 'create'], ['rollout', 'status'], ['release', 'list'], ['receipts'], ['serve', '--listen', '127.0.0.1:0']]) {
    const r = await cliOn(missing, ...args, '--json');
    assert.deepEqual([r.code, r.json.error.code], [1, 'STATE_INVALID'], args.join(' '));
    assert.match(r.json.error.message, new RegExp(`${missing.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} does not exist.*steward-control init`), args.join(' '));
    assert.equal(existsSync(missing), false, `${args.join(' ')} made no file`);
  }
  const made = await cliOn(missing, 'init', '--json');
  assert.deepEqual([made.code, made.json.created, made.json.schemaVersion], [0, true, STORE_SCHEMA_VERSION]);
  assert.deepEqual((await cliOn(missing, 'nodes', '--json')).json, { nodes: [] });
  assert.equal((await cliOn(missing, 'init', '--json')).json.created, false, 'init again keeps it');
});

test('keys create writes a 0600 private key and its public key, prints JSON, and refuses to overwrite', async () => {
  const r = await cli('keys', 'create', '--out', path.join(dir, 'keys'), '--json');
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.json.keyId, /^[0-9a-f]{16}$/);
  assert.equal(statSync(r.json.privateKeyFile).mode & 0o777, 0o600);
  assert.equal(keyIdOf(createPublicKey(readFileSync(r.json.publicKeyFile))), r.json.keyId);
  const again = await cli('keys', 'create', '--out', path.join(dir, 'keys'), '--json');
  assert.deepEqual([again.code, again.json.ok, again.json.error.code], [3, false, 'FORBIDDEN']);
});

test('release add signs a manifest that verifies with the public key; other bytes under the same version are refused', async () => {
  const tgz = path.join(dir, 'web-1.0.0.tgz');
  writeFileSync(tgz, Buffer.from('pretend this is a gzip tarball'));
  const r = await cli('release', 'add', 'web', '1.0.0', '--file', tgz, '--base-url', 'http://127.0.0.1:1/', '--key', path.join(dir, 'keys', 'release.key'), '--json');
  assert.equal(r.code, 0, r.stderr);
  const pub = createPublicKey(readFileSync(path.join(dir, 'keys', 'release.pub')));
  const opened = openEnvelope(r.json.manifest, DOMAINS.manifest, new Map([[keyIdOf(pub), pub]]));
  assert.ok(opened.ok);
  const m = manifestPayloadSchema.parse(opened.payload);
  assert.deepEqual([m.name, m.version, m.size, m.url], ['web', '1.0.0', 30, 'http://127.0.0.1:1/v1/artifacts/web/1.0.0.tgz']);
  assert.ok(m.expires > Date.now() + 29 * 86_400_000);
  writeFileSync(tgz, Buffer.from('other bytes'));
  const clash = await cli('release', 'add', 'web', '1.0.0', '--file', tgz, '--base-url', 'http://127.0.0.1:1', '--key', path.join(dir, 'keys', 'release.key'), '--json');
  assert.deepEqual([clash.code, clash.json.error.code], [3, 'RELEASE_EXISTS']);
  const list = await cli('release', 'list', '--json');
  assert.deepEqual(list.json.releases.map((x: { app: string; version: string }) => `${x.app}@${x.version}`), ['web@1.0.0']);
});

test('bad durations, ports and names are usage errors (exit 2) with a JSON error document', async () => {
  for (const args of [['token', 'create', '--ttl', 'soon'], ['rollout', 'start', 'web', '1.0.0', '--verdict-timeout', '5'], ['serve', '--listen', '127.0.0.1:99999'], ['rollout', 'status', '../web']]) {
    const r = await cli(...args, '--json');
    assert.deepEqual([r.code, r.json.error.code], [2, 'USAGE'], args.join(' '));
  }
  const start = ['rollout', 'start', 'web', '1.0.0'];
  for (const extra of [['--select', 'env in (a'], ['--select', 'Env=x'], ['--window', 'Mon 25:00-26:00'], ['--window', 'Someday 01:00-02:00'], ['--tz', 'Mars/Olympus'], ['--batch', '0'], ['--batch', '150%'], ['--batch', 'ten'], ['--bake', 'soon'], ['--start-at', '2026-01-01'], ['--start-at', '2026-01-01T02:00'], ['--max-refused', 'most'], ['--canaries', '-1'], ['--max-failures', '1.5'], ['--seed', 'x']]) {
    const r = await cli(...start, ...extra, '--json');
    assert.deepEqual([r.code, r.json.error.code], [2, 'USAGE'], extra.join(' '));
  }
  assert.equal((await cli('no-such-command')).code, 2);
});

test('serve refuses plain http on a non-loopback address without --insecure', async () => {
  const r = await cli('serve', '--listen', '0.0.0.0:0', '--json');
  assert.deepEqual([r.code, r.json.error.code], [3, 'FORBIDDEN']);
});

test('a fleet through the CLI: serve, token, enroll, rollout start/status, nodes, receipts, artifacts; every --json output parses', async () => {
  const server = await serve('--listen', '127.0.0.1:0', '--heartbeat-seconds', '5');
  try {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const token = (await cli('token', 'create', '--ttl', '10m', '--json')).json.token as string;
    const node = await new FakeNode({ clock: { now: () => Date.now() }, server: { url: server.url }, token: () => token }, 'cli-host').enroll();
    node.setCurrent('web', '0.9.0');
    assert.equal((await node.heartbeat()).body.heartbeatSeconds, 5);

    const started = await cli('rollout', 'start', 'web', '1.0.0', '--verdict-timeout', '10m', '--bake', '0', '--json');
    assert.equal(started.code, 0, started.stdout + started.stderr);
    assert.deepEqual([started.json.status, started.json.nodes[0].state, started.json.heartbeatIntervalMs], ['running', 'issued', 5000]);
    const busy = await cli('rollout', 'start', 'web', '1.0.0', '--json');
    assert.deepEqual([busy.code, busy.json.error.code], [3, 'BUSY']);

    const desired = await node.answer('active');
    assert.deepEqual(desired.map((d) => d.attemptId), [started.json.nodes[0].attemptId]);

    const status = await cli('rollout', 'status', 'web', '--json');
    assert.equal(status.code, 0);
    assert.deepEqual([status.json.runs[0].status, status.json.runs[0].nodes[0].state, status.json.runs[0].nodes[0].outcome], ['succeeded', 'confirmed', 'active']);
    const nodes = await cli('nodes', '--json');
    assert.deepEqual([nodes.json.nodes[0].nodeId, nodes.json.nodes[0].hostname, nodes.json.nodes[0].apps[0].current, nodes.json.nodes[0].receiptLost], [node.nodeId, 'cli-host', '1.0.0', []]);
    const receipts = await cli('receipts', '--node', node.nodeId, '--json');
    assert.deepEqual(receipts.json.receipts.map((r: Record<string, unknown>) => [r.seq, r.app, r.outcome, r.fromVersion, r.targetVersion, r.counts]), [[1, 'web', 'active', '1.0.0', '1.0.0', true]]);
    const retry = await cli('rollout', 'retry', 'web', '--json');
    assert.deepEqual([retry.code, retry.json.error.code], [3, 'NOTHING_TO_RETRY'], 'every node confirmed: a refusal, never a succeeded run');
    for (const args of [['rollout', 'stop', 'web'], ['rollout', 'pause', 'web'], ['nodes', 'remove', 'n-000000000000']]) {
      const r = await cli(...args, '--json');
      assert.deepEqual([r.code, r.json.ok, r.json.error.code], [1, false, 'NOT_FOUND'], args.join(' '));
    }
    for (const human of [['rollout', 'status'], ['nodes'], ['receipts'], ['release', 'list']]) {
      const r = await cli(...human);
      assert.equal(r.code, 0, human.join(' '));
      assert.ok(r.stdout.length > 0);
    }

    const artifact = await request(server.url, '/v1/artifacts/web/1.0.0.tgz', 'GET');
    assert.equal(artifact.status, 200);
    assert.deepEqual(artifact.raw, readFileSync(`${db}.artifacts/web/1.0.0.tgz`));
    assert.equal(artifact.headers['content-length'], String(artifact.raw.length));
    for (const p of ['/v1/artifacts/../control.db', '/v1/artifacts/web/../../control.db', '/v1/artifacts/web/..%2f..%2fcontrol.db.tgz', '/v1/artifacts/%2e%2e/1.0.0.tgz', '/v1/artifacts/web/1.0.0.tgz/x', '/v1/artifacts/web/9.9.9.tgz']) {
      const r = await request(server.url, p, 'GET');
      assert.ok(r.status === 404 || r.status === 400, `${p}: ${r.status}`);
      assert.equal(r.raw.includes(Buffer.from('SQLite format')), false, p);
    }
    assert.equal((await request(server.url, '/v1/heartbeat', 'GET')).status, 405);
    assert.equal((await request(server.url, '/nope', 'GET')).body.error.code, 'NOT_FOUND');

    const removed = await cli('nodes', 'remove', node.nodeId, '--json');
    assert.deepEqual(removed.json, { removed: node.nodeId });
    assert.equal((await node.heartbeat()).status, 401);
  } finally {
    assert.equal(await server.stop(), 0, 'SIGTERM closes serve cleanly');
  }
});

test('serve with TLS answers over https with a self-signed certificate made by openssl', async (t) => {
  if (!hasOpenssl()) {
    skipUnlessCI(t, 'openssl is not available to make a certificate');
    return;
  }
  const { keyFile: key, certFile: cert } = selfSignedCert(dir, 'tls');
  const server = await serve('--listen', '127.0.0.1:0', '--tls-cert', cert, '--tls-key', key, '--json');
  try {
    assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const https = await import('node:https');
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      https.get(`${server.url}/v1/artifacts/web/1.0.0.tgz`, { ca: readFileSync(cert) }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString('latin1')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      }).on('error', reject);
    });
    assert.equal(answer.status, 200);
    assert.equal(answer.body, readFileSync(`${db}.artifacts/web/1.0.0.tgz`, 'latin1'));
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('release add with --url signs that url and keeps no tarball; a release added so is not served', async () => {
  const tgz = path.join(dir, 'api-2.0.0.tgz');
  writeFileSync(tgz, Buffer.from('api tarball'));
  const r = await cli('release', 'add', 'api', '2.0.0', '--file', tgz, '--url', 'https://cdn.example/api-2.0.0.tgz', '--key', path.join(dir, 'keys', 'release.key'), '--expires-days', '2', '--json');
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual([r.json.payload.url, r.json.artifactPath], ['https://cdn.example/api-2.0.0.tgz', null]);
  assert.ok(r.json.payload.expires < Date.now() + 2 * 86_400_000 + 60_000);
  const both = await cli('release', 'add', 'api', '2.0.0', '--file', tgz, '--url', 'https://x.example/a.tgz', '--base-url', 'http://127.0.0.1:1', '--key', path.join(dir, 'keys', 'release.key'), '--json');
  assert.deepEqual([both.code, both.json.error.code], [2, 'USAGE']);
});
