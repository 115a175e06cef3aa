// An operator token or session cookie sent over plain http from another host has crossed the
// network in clear text (docs/design.md §12): it is refused without being checked, also when a trusted
// proxy on loopback relays such a client over plain http. Only loopback, or TLS (the socket's
// own, or a trusted proxy's X-Forwarded-Proto: https), may carry a credential.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import os from 'node:os';
import { startAdminServer, type AdminServer } from '../../src/control/admin/admin-server.js';
import { createAdminRouter } from '../../src/control/admin/router.js';
import { artifactsDirOf } from '../../src/control/catalog/artifact-path.js';
import { addOperator, adminCall } from '../helpers/admin-client.js';
import { dumpStore, startControlInProcess, type Control } from '../helpers/control-harness.js';
import { skipUnlessCI } from '../helpers/skip.js';

let c: Control;
let admin = '';

before(async () => {
  c = await startControlInProcess({ admin: { trustedProxies: ['127.0.0.1'] } });
  admin = await addOperator(c.store, 'adam', 'admin');
});
after(() => c.close());

// A non-loopback IPv4 address of this host, if it has one.
function hostAddress(): string | undefined {
  return Object.values(os.networkInterfaces())
    .flat()
    .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
}

test('a valid bearer token relayed over plain http for a client on another host is refused 403, unchecked', async () => {
  const before = dumpStore(c.store);
  const r = await adminCall(c.server.url, '/v1/admin/nodes', { token: admin, headers: { 'x-forwarded-for': '203.0.113.7' } });
  assert.deepEqual([r.status, r.body.error.code], [403, 'FORBIDDEN']);
  assert.match(r.body.error.message, /plain http from 203\.0\.113\.7.*rotate/);
  assert.deepEqual(dumpStore(c.store), before, 'not checked: no failure counted, nothing audited');
});

test('the same token through the proxy over TLS (X-Forwarded-Proto: https), or from the proxy host itself, is taken', async () => {
  const tls = await adminCall(c.server.url, '/v1/admin/nodes', { token: admin, headers: { 'x-forwarded-for': '203.0.113.7', 'x-forwarded-proto': 'https' } });
  assert.equal(tls.status, 200, JSON.stringify(tls.body));
  const local = await adminCall(c.server.url, '/v1/admin/nodes', { token: admin });
  assert.equal(local.status, 200);
});

test('a dashboard login relayed over plain http for a client on another host is refused 403', async () => {
  const r = await adminCall(c.server.url, '/ui/login', { json: { token: admin }, headers: { 'x-forwarded-for': '198.51.100.4' } });
  assert.deepEqual([r.status, r.body.error.code, r.headers['set-cookie']], [403, 'FORBIDDEN', undefined]);
});

test('a session cookie made over loopback is refused when it comes over plain http from another host', async () => {
  const login = await adminCall(c.server.url, '/ui/login', { json: { token: admin } });
  assert.equal(login.status, 200);
  const cookie = String(login.headers['set-cookie']?.[0]).split(';')[0] as string;
  const near = await adminCall(c.server.url, '/ui/session', { headers: { cookie } });
  assert.equal(near.status, 200);
  const far = await adminCall(c.server.url, '/ui/session', { headers: { cookie, 'x-forwarded-for': '198.51.100.4' } });
  assert.deepEqual([far.status, far.body.error.code], [403, 'FORBIDDEN']);
});

test('a bearer token sent straight to a plain http admin listener from a non-loopback address is refused 403', async (t) => {
  const address = hostAddress();
  if (!address) return skipUnlessCI(t, 'this host has no non-loopback IPv4 address to listen on');
  const router = createAdminRouter({ store: c.store, artifactsDir: artifactsDirOf(c.dbFile), clock: { sleep: async () => undefined } });
  let server: AdminServer | undefined;
  try {
    server = await startAdminServer({ router, host: address, port: 0 });
    const r = await adminCall(server.url, '/v1/admin/nodes', { token: admin, localAddress: address });
    assert.deepEqual([r.status, r.body.error.code], [403, 'FORBIDDEN']);
    assert.match(r.body.error.message, new RegExp(`plain http from ${address.replace(/\./g, '\\.')}`));
  } finally {
    await server?.close();
  }
});
