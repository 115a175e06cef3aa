import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import os from 'node:os';
import path from 'node:path';
import { createControlPlaneClient, MAX_ANSWER_BYTES } from '../../src/agent/control-plane-client.js';
import { checkControlPlaneUrl, endpointUrl, isInsecureUrl } from '../../src/agent/control-plane-url.js';
import { StewardError } from '../../src/core/errors.js';
import { skipUnlessCI } from '../helpers/skip.js';
import { hasOpenssl, selfSignedCert } from '../helpers/tls-cert.js';

const codeOf = (fn: () => unknown): string | null => {
  try {
    fn();
    return null;
  } catch (err) {
    return err instanceof StewardError ? err.code : 'not a StewardError';
  }
};

test('plain http goes only to a loopback host unless insecure; https always; credentials and other schemes never', () => {
  const table: Array<[string, boolean, string | null]> = [
    ['https://cp.example:8443', false, null],
    ['http://127.0.0.1:8080', false, null],
    ['http://localhost:8080', false, null],
    ['http://[::1]:8080', false, null],
    ['http://cp.example:8080', false, 'CONFIG_INVALID'],
    ['http://10.0.0.5', false, 'CONFIG_INVALID'],
    ['http://cp.example:8080', true, null],
    ['https://user:pw@cp.example', false, 'CONFIG_INVALID'],
    ['https://cp.example/?token=x', false, 'CONFIG_INVALID'],
    ['ftp://cp.example', true, 'CONFIG_INVALID'],
    ['file:///etc/passwd', true, 'CONFIG_INVALID'],
    ['not a url', false, 'CONFIG_INVALID'],
  ];
  for (const [url, insecure, want] of table) assert.equal(codeOf(() => checkControlPlaneUrl(url, insecure)), want, `${url} insecure=${insecure}`);
  assert.equal(isInsecureUrl(checkControlPlaneUrl('http://cp.example', true)), true);
  assert.equal(isInsecureUrl(checkControlPlaneUrl('http://127.0.0.1:1')), false);
  assert.equal(endpointUrl(new URL('https://cp.example/steward/'), '/v1/heartbeat').href, 'https://cp.example/steward/v1/heartbeat');
  // An endpoint's query goes to the URL's search, not into its path (`?` escaped there was a 404).
  assert.equal(endpointUrl(new URL('https://cp.example/steward/'), '/v1/wait?timeout=30').href, 'https://cp.example/steward/v1/wait?timeout=30');
});

async function serve(server: http.Server | https.Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return (server.address() as AddressInfo).port;
}

test('a control plane that does not answer in time, or answers more than 4 MiB, is CONTROL_PLANE_UNREACHABLE', async () => {
  const server = http.createServer((req, res) => {
    if (req.url === '/slow') return; // never answers
    res.setHeader('Content-Type', 'application/json');
    res.end(Buffer.alloc(MAX_ANSWER_BYTES + 10, 0x20));
  });
  const port = await serve(server);
  try {
    const client = await createControlPlaneClient({ url: `http://127.0.0.1:${port}` }, { timeoutMs: 300 });
    await assert.rejects(client.post('/slow', {}), (e: StewardError) => e.code === 'CONTROL_PLANE_UNREACHABLE' && /within 300 ms/.test(e.message));
    // Its own client with time to spare: 4 MiB may take longer than 300 ms on a loaded machine,
    // and it is the size that must refuse it here, not the clock.
    const patient = await createControlPlaneClient({ url: `http://127.0.0.1:${port}` }, { timeoutMs: 60_000 });
    await assert.rejects(patient.post('/big', {}), (e: StewardError) => e.code === 'CONTROL_PLANE_UNREACHABLE' && /larger than/.test(e.message));
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

test('https with controlPlane.caFile trusts a self-signed control plane; without the CA file it is refused', async (t) => {
  if (!hasOpenssl()) {
    skipUnlessCI(t, 'openssl is not installed: cannot make a self-signed certificate');
    return;
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-agent-tls-'));
  const { certFile: cert, key: keyBytes, cert: certBytes } = selfSignedCert(dir);
  const bodies: unknown[] = [];
  const server = https.createServer({ key: keyBytes, cert: certBytes }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ hello: req.url }));
    });
  });
  const port = await serve(server);
  try {
    for (const host of ['localhost', '127.0.0.1']) {
      const client = await createControlPlaneClient({ url: `https://${host}:${port}`, caFile: cert });
      assert.deepEqual(await client.post('/v1/heartbeat', { n: 1 }), { status: 200, json: { hello: '/v1/heartbeat' } });
    }
    assert.deepEqual(bodies, [{ n: 1 }, { n: 1 }]);
    const untrusting = await createControlPlaneClient({ url: `https://localhost:${port}` });
    await assert.rejects(untrusting.post('/v1/heartbeat', {}), (e: StewardError) => e.code === 'CONTROL_PLANE_UNREACHABLE');
    assert.equal(bodies.length, 2, 'nothing was sent to an untrusted server');
  } finally {
    server.closeAllConnections();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('over https a connection resumes the TLS session of the last one to that origin; a server that cannot is given a full handshake, and an untrusted one is still refused', async (t) => {
  if (!hasOpenssl()) {
    skipUnlessCI(t, 'openssl is not installed: cannot make a self-signed certificate');
    return;
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-agent-tls-resume-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const trusted = selfSignedCert(dir, 'trusted');
  const stranger = selfSignedCert(dir, 'stranger');
  // Whether each new connection resumed a session, in order, across every server below (the
  // client keeps its connection: client.close() drops it, so that the next request opens one).
  const reused: boolean[] = [];
  const seen = new WeakSet<object>();
  let port = 0;
  const start = async (pair: { key: Buffer; cert: Buffer }, maxVersion: 'TLSv1.2' | 'TLSv1.3' = 'TLSv1.3') => {
    // A new server has new session-ticket keys: it cannot resume another server's sessions.
    const server = https.createServer({ key: pair.key, cert: pair.cert, maxVersion }, (req, res) => {
      if (!seen.has(req.socket)) reused.push((req.socket as TLSSocket).isSessionReused());
      seen.add(req.socket);
      req.resume();
      req.on('end', () => res.end('{}'));
    });
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
    port = (server.address() as AddressInfo).port;
    return async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    };
  };
  let stop = await start(trusted);
  const client = await createControlPlaneClient({ url: `https://localhost:${port}`, caFile: trusted.certFile });
  // A failed assertion must not leave a kept connection and a server holding the file open.
  t.after(async () => {
    client.close();
    await stop();
  });
  for (let i = 0; i < 3; i++) assert.equal((await client.post('/v1/heartbeat', { i })).status, 200);
  // A wake-up wait after a heartbeat goes on the same kept connection.
  assert.equal((await client.get(() => ({ endpoint: '/v1/wait?timeout=5', headers: { Authorization: 'Steward-Node x' }, timeoutMs: 5_000 }))).status, 200);
  assert.deepEqual(reused, [false], 'three heartbeats and a wait, one kept connection');
  for (let i = 0; i < 2; i++) {
    client.close();
    assert.equal((await client.post('/v1/heartbeat', { i })).status, 200);
  }
  assert.deepEqual(reused, [false, true, true], 'the second and third connections resumed the first one\'s session');
  // The same address, a restarted server: the session it cannot resume costs a full handshake.
  await stop();
  stop = await start(trusted);
  for (let i = 0; i < 2; i++) {
    client.close();
    assert.equal((await client.post('/v1/heartbeat', { i })).status, 200);
  }
  assert.deepEqual(reused.slice(3), [false, true]);
  // The same address, a server with a certificate nobody trusts: a session does not let it in.
  await stop();
  stop = await start(stranger);
  await assert.rejects(client.post('/v1/heartbeat', {}), (e: StewardError) => e.code === 'CONTROL_PLANE_UNREACHABLE');
  assert.equal(reused.length, 5, 'nothing was sent to the untrusted server');
  await stop();
  stop = await start(trusted);
  assert.equal((await client.post('/v1/heartbeat', {})).status, 200);
  assert.deepEqual(reused.slice(5), [false]);
  await stop();
  // A server that speaks TLS 1.2 at most: its sessions are resumed too.
  stop = await start(trusted, 'TLSv1.2');
  for (let i = 0; i < 3; i++) {
    client.close();
    assert.equal((await client.post('/v1/heartbeat', { i })).status, 200);
  }
  assert.deepEqual(reused.slice(6), [false, true, true]);
  await stop();
});

test('a post whose signal is already aborted rejects with CONTROL_PLANE_UNREACHABLE and sends nothing', async () => {
  let got = 0;
  const server = http.createServer((_q, res) => {
    got++;
    res.end('{}');
  });
  const port = await serve(server);
  try {
    const client = await createControlPlaneClient({ url: `http://127.0.0.1:${port}` });
    await assert.rejects(client.post('/v1/heartbeat', {}, AbortSignal.abort()), (e: StewardError) => e.code === 'CONTROL_PLANE_UNREACHABLE' && /aborted/.test(e.message));
    // A request that gets through afterwards shows the server was reachable all along.
    assert.equal((await client.post('/v1/heartbeat', {})).status, 200);
    assert.equal(got, 1);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
