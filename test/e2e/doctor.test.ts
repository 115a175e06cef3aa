import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { receiptsFile, trustedKeysFor } from '../../src/core/paths.js';
import { generateKeyPair } from '../../src/platform/keys.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp } from '../helpers/host.js';
import { freePort, releaseArgs } from '../fixtures/app-releases.js';

const apps = { web: processApp({ stopTimeoutMs: 1000 }) };
const host = useHost(after, { apps });

before(async () => {
  await host.startHelper();
  // One real update: a release tree, a current symlink and a receipts file to check.
  const port = await freePort();
  const r = await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port), '--json']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
});

interface Check {
  name: string;
  status: 'ok' | 'warn' | 'fail';
  detail: string;
}

async function doctor(): Promise<{ code: number; checks: Check[]; failed: Check[] }> {
  const r = await agentctl(host, ['doctor', '--json']);
  assert.ok(r.json, `doctor --json printed JSON: ${r.stdout} ${r.stderr}`);
  const checks = r.json.checks as Check[];
  assert.equal(r.json.ok, checks.every((c) => c.status !== 'fail'));
  return { code: r.code, checks, failed: checks.filter((c) => c.status === 'fail') };
}

// Plants a problem, expects exactly `name` to fail with a detail naming `file`, then undoes it.
async function expectOnlyFailure(name: string, file: string, plant: () => void, undo: () => void): Promise<void> {
  plant();
  try {
    const r = await doctor();
    assert.deepEqual(r.failed.map((c) => c.name), [name], JSON.stringify(r.failed));
    assert.ok(r.failed[0]?.detail.includes(file), `${r.failed[0]?.detail} names ${file}`);
    assert.equal(r.code, 1);
  } finally {
    undo();
  }
}

test('a healthy host is all ok or warn, exits 0, and prints one line per check', { timeout: 60_000 }, async () => {
  const r = await doctor();
  assert.deepEqual(r.failed, []);
  assert.equal(r.code, 0);
  const names = r.checks.map((c) => c.name);
  for (const n of ['units', 'helper.sock', 'admin.sock', 'helper status', 'permissions', 'helper key', 'trusted keys', 'enrollment', 'config', 'control plane', 'clock ntp', 'clock skew']) {
    assert.ok(names.includes(n), `${n} in ${names.join(', ')}`);
  }
  assert.equal(r.checks.find((c) => c.name === 'permissions')?.status, 'ok');
  const human = await agentctl(host, ['doctor']);
  assert.equal(human.code, 0);
  const lines = human.stdout.trimEnd().split('\n');
  assert.equal(lines.length, r.checks.length);
  for (const line of lines) assert.match(line, /^(ok  |warn|fail)  \S/);
});

test('a group-writable config fails the permissions check only', { timeout: 60_000 }, async () => {
  const f = host.paths.configFile;
  await expectOnlyFailure('permissions', f, () => chmodSync(f, 0o664), () => chmodSync(f, 0o644));
});

test('a world-writable folder under /opt/steward fails the permissions check only', { timeout: 60_000 }, async () => {
  const d = path.join(host.paths.appsDir, 'web', 'planted');
  const plant = () => {
    mkdirSync(d);
    chmodSync(d, 0o777);
  };
  await expectOnlyFailure('permissions', d, plant, () => rmdirSync(d));
});

test('a helper.key with mode 0644 fails the permissions check only', { timeout: 60_000 }, async () => {
  const f = host.paths.helperKey;
  await expectOnlyFailure('permissions', f, () => chmodSync(f, 0o644), () => chmodSync(f, 0o600));
});

test('a helper.pub that does not match helper.key fails the helper key check only', { timeout: 60_000 }, async () => {
  const f = host.paths.helperPub;
  const original = readFileSync(f);
  await expectOnlyFailure('helper key', f, () => writeFileSync(f, generateKeyPair().publicPem), () => writeFileSync(f, original));
});

test('a trusted key that is not a key fails the trusted keys check only', { timeout: 60_000 }, async () => {
  const dir = trustedKeysFor(host.paths, 'web');
  const f = path.join(dir, 'not-a-key.pub');
  const plant = () => {
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    writeFileSync(f, 'hello, I am not a PEM key\n', { mode: 0o644 });
  };
  await expectOnlyFailure('trusted keys', f, plant, () => rmSync(f));
});

test('a world-writable trusted key fails permissions, and trusted keys says the helper ignores it', { timeout: 60_000 }, async () => {
  const dir = trustedKeysFor(host.paths, 'web');
  const f = path.join(dir, 'open.pub');
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  writeFileSync(f, generateKeyPair().publicPem, { mode: 0o644 });
  chmodSync(f, 0o666);
  try {
    const r = await doctor();
    assert.deepEqual(r.failed.map((c) => c.name), ['permissions', 'trusted keys'], JSON.stringify(r.failed));
    assert.match(r.failed[1]?.detail ?? '', /open\.pub is writable by group or others \(mode 666\); the helper ignores it/);
  } finally {
    rmSync(f);
  }
});

test('a CA file the config names that others can write fails the ca file check only', { timeout: 60_000 }, async () => {
  const ca = path.join(host.scratch, 'ca.pem');
  writeFileSync(ca, 'not checked for being a CA, only for who may write it\n', { mode: 0o644 });
  host.writeConfig({ apps, fetch: { caFile: ca } });
  try {
    assert.equal((await doctor()).checks.find((c) => c.name === 'ca file')?.status, 'ok');
    await expectOnlyFailure('ca file', ca, () => chmodSync(ca, 0o666), () => chmodSync(ca, 0o644));
  } finally {
    host.writeConfig({ apps });
  }
});

test('a receipts file with the wrong mode fails the permissions check only', { timeout: 60_000 }, async () => {
  const f = receiptsFile(host.paths, 'web');
  await expectOnlyFailure('permissions', f, () => chmodSync(f, 0o644), () => chmodSync(f, 0o640));
});

// A control plane on loopback whose Date header is `offsetMs` off this host's clock.
async function skewedControlPlane(offsetMs: number): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((_req, res) => {
    res.setHeader('Date', new Date(Date.now() + offsetMs).toUTCString());
    res.writeHead(405, { 'Content-Type': 'application/json' });
    res.end('{"error":{"code":"BAD_BODY","message":"POST only"}}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

async function doctorWith(url: string | string[]): Promise<{ code: number; skew: Check | undefined; cp: Check | undefined; failed: Check[] }> {
  host.writeConfig({ apps, controlPlane: { url } });
  try {
    const r = await doctor();
    return { code: r.code, skew: r.checks.find((c) => c.name === 'clock skew'), cp: r.checks.find((c) => c.name === 'control plane'), failed: r.failed };
  } finally {
    host.writeConfig({ apps });
  }
}

test('a control plane 10 minutes off fails the clock check, 2 minutes off warns', { timeout: 60_000 }, async () => {
  const far = await skewedControlPlane(10 * 60_000);
  try {
    const r = await doctorWith(far.url);
    assert.deepEqual(r.failed.map((c) => c.name), ['clock skew']);
    assert.match(r.skew?.detail ?? '', /10\.0 min behind the control plane/);
    assert.equal(r.code, 1);
  } finally {
    await far.close();
  }
  const near = await skewedControlPlane(-2 * 60_000);
  try {
    const r = await doctorWith(near.url);
    assert.equal(r.skew?.status, 'warn');
    assert.match(r.skew?.detail ?? '', /2\.0 min ahead of the control plane/);
    assert.equal(r.code, 0);
  } finally {
    await near.close();
  }
});

test('a control plane that is down fails the control plane check and warns the clock check, both naming why', { timeout: 60_000 }, async () => {
  const port = await freePort();
  const r = await doctorWith(`http://127.0.0.1:${port}`);
  assert.equal(r.skew?.status, 'warn');
  assert.match(r.skew?.detail ?? '', /ECONNREFUSED/);
  assert.deepEqual(r.failed.map((c) => c.name), ['control plane']);
  assert.match(r.cp?.detail ?? '', /the control plane does not answer: http:\/\/127\.0\.0\.1:\d+: .*ECONNREFUSED/);
  assert.equal(r.code, 1);
});

test('with a list of control planes one that is down or answers 503 warns, and only none answering fails', { timeout: 60_000 }, async () => {
  const live = await skewedControlPlane(0);
  const busy = http.createServer((_req, res) => res.writeHead(503).end());
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  const busyUrl = `http://127.0.0.1:${(busy.address() as AddressInfo).port}`;
  const dead = `http://127.0.0.1:${await freePort()}`;
  try {
    const some = await doctorWith([dead, busyUrl, live.url]);
    assert.equal(some.cp?.status, 'warn', JSON.stringify(some.cp));
    assert.match(some.cp?.detail ?? '', /2 of 3 control plane URLs do not answer: .*ECONNREFUSED.*HTTP 503; http:\/\/127\.0\.0\.1:\d+ answers \(HTTP 405\)/);
    assert.equal(some.skew?.status, 'ok', 'the clock is measured against the one that answers');
    assert.deepEqual(some.failed, []);
    assert.equal(some.code, 0);
    const none = await doctorWith([dead, busyUrl]);
    assert.deepEqual(none.failed.map((c) => c.name), ['control plane']);
    assert.match(none.cp?.detail ?? '', /none of the 2 control plane URLs answers/);
    assert.equal(none.code, 1);
  } finally {
    await live.close();
    busy.close();
  }
});

test('an enrolled node with a list of control planes has each checked, and doctor names the one the agent is on', { timeout: 60_000 }, async () => {
  const live = await skewedControlPlane(0);
  const dead = `http://127.0.0.1:${await freePort()}`;
  const files = ['enrollment.json', 'control-plane.json'].map((f) => path.join(host.paths.agentDir, f));
  mkdirSync(host.paths.agentDir, { recursive: true, mode: 0o700 });
  writeFileSync(files[0] as string, JSON.stringify({ schemaVersion: 1, nodeId: 'node-1', controlPlaneUrl: dead, enrolledAt: Date.now(), heartbeatSeconds: 30, nodeKeyId: '0123456789abcdef' }), { mode: 0o600 });
  writeFileSync(files[1] as string, JSON.stringify({ schemaVersion: 1, urls: [dead, live.url], answered: { url: `${live.url}/`, since: Date.parse('2030-01-01T00:00:00Z') } }), { mode: 0o600 });
  writeFileSync(host.paths.nodeState, JSON.stringify({ schemaVersion: 1, nodeId: 'node-1' }), { mode: 0o600 });
  try {
    const r = await doctor();
    const cp = r.checks.find((c) => c.name === 'control plane');
    assert.equal(cp?.status, 'warn', JSON.stringify(cp));
    assert.match(cp?.detail ?? '', /1 of 2 control plane URLs do not answer: .*ECONNREFUSED\); http:\/\/127\.0\.0\.1:\d+ answers \(HTTP 405\) \(enrolled in .*control-plane\.json\); the agent is on http:\/\/127\.0\.0\.1:\d+\/, the last URL that answered it \(since 2030-01-01T00:00:00\.000Z\)/);
    assert.equal(r.checks.find((c) => c.name === 'clock skew')?.status, 'ok');
    assert.deepEqual(r.failed, []);
  } finally {
    for (const f of files) rmSync(f, { force: true });
    rmSync(host.paths.nodeState, { force: true });
    await live.close();
  }
});

test('an enrolled node whose host config names no control plane has its clock checked against the one it enrolled with', { timeout: 60_000 }, async () => {
  const far = await skewedControlPlane(10 * 60_000);
  const enrollment = path.join(host.paths.agentDir, 'enrollment.json');
  mkdirSync(host.paths.agentDir, { recursive: true, mode: 0o700 });
  writeFileSync(enrollment, JSON.stringify({ schemaVersion: 1, nodeId: 'node-1', controlPlaneUrl: far.url, enrolledAt: Date.now(), heartbeatSeconds: 30, nodeKeyId: '0123456789abcdef' }), { mode: 0o600 });
  writeFileSync(host.paths.nodeState, JSON.stringify({ schemaVersion: 1, nodeId: 'node-1' }), { mode: 0o600 });
  try {
    const r = await doctor();
    const skew = r.checks.find((c) => c.name === 'clock skew');
    assert.equal(skew?.status, 'fail', JSON.stringify(skew));
    assert.match(skew?.detail ?? '', /10\.0 min behind the control plane http:\/\/127\.0\.0\.1:\d+\/? \(enrolled in .*enrollment\.json\)/);
    assert.equal(r.checks.find((c) => c.name === 'enrollment')?.status, 'ok');
  } finally {
    rmSync(enrollment, { force: true });
    rmSync(host.paths.nodeState, { force: true });
    await far.close();
  }
});
