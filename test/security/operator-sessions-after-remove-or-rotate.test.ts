// A removed or rotated operator is out at once (docs/design.md §12): its old token and every dashboard
// session it made stop working on the next request, on any instance, since sessions live in the
// store and are deleted in the transaction that removes or rotates the operator.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { localActor } from '../../src/control/audit/record-audit.js';
import { artifactsDirOf } from '../../src/control/catalog/artifact-path.js';
import { runOperation } from '../../src/control/operations/operations.js';
import { operatorRemove } from '../../src/control/operations/operator-ops.js';
import { addOperator, adminCall } from '../helpers/admin-client.js';
import { dumpStore, startControlInProcess, type Control } from '../helpers/control-harness.js';

let c: Control;
let admin = '';

before(async () => {
  c = await startControlInProcess({ admin: {} });
  admin = await addOperator(c.store, 'adam', 'admin');
});
after(() => c.close());

// Logs in with `token` and returns the session cookie.
async function login(token: string): Promise<string> {
  const r = await adminCall(c.server.url, '/ui/login', { json: { token } });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return String(r.headers['set-cookie']?.[0]).split(';')[0] as string;
}

const sessionStatus = async (cookie: string) => (await adminCall(c.server.url, '/ui/session', { headers: { cookie } })).status;
const apiStatus = async (cookie: string) => (await adminCall(c.server.url, '/ui/api/nodes', { headers: { cookie } })).status;
const bearerStatus = async (token: string) => (await adminCall(c.server.url, '/v1/admin/nodes', { token })).status;
const sessionsOf = (name: string) => (dumpStore(c.store).sessions as Array<{ operator: string }>).filter((s) => s.operator === name).length;

test('a login is audited with its operator, and a failed one as a failed authentication', async () => {
  const olga = await addOperator(c.store, 'olga', 'operator');
  const seen = (dumpStore(c.store).audit as unknown[]).length;
  await login(olga);
  const bad = await adminCall(c.server.url, '/ui/login', { json: { token: 'so_' + 'C'.repeat(32) } });
  assert.deepEqual([bad.status, bad.headers['set-cookie']], [401, undefined]);
  const added = (dumpStore(c.store).audit as Array<{ operator: string | null; action: string; target: string }>).slice(seen);
  assert.deepEqual(added.map((e) => [e.operator, e.action, e.target]), [['olga', 'session.login', 'olga'], [null, 'auth.failed', '/ui/login']]);
  await adminCall(c.server.url, '/v1/admin/operator/remove', { token: admin, json: { name: 'olga' } });
});

test('rotating an operator ends its sessions and its old token; the new token works', async () => {
  const old = await addOperator(c.store, 'rita', 'operator');
  const cookies = [await login(old), await login(old)];
  for (const k of cookies) assert.deepEqual([await sessionStatus(k), await apiStatus(k)], [200, 200]);

  const r = await adminCall(c.server.url, '/v1/admin/operator/rotate', { token: admin, json: { name: 'rita' } });
  assert.deepEqual([r.status, r.body.sessionsEnded], [200, 2]);
  assert.equal(sessionsOf('rita'), 0);
  for (const k of cookies) assert.deepEqual([await sessionStatus(k), await apiStatus(k)], [401, 401]);
  assert.equal(await bearerStatus(old), 401);
  assert.equal(await bearerStatus(r.body.token), 200);
  const fresh = await login(r.body.token);
  assert.equal(await sessionStatus(fresh), 200);
});

test('removing an operator ends its sessions and its token', async () => {
  const token = await addOperator(c.store, 'rene', 'viewer');
  const cookie = await login(token);
  assert.equal(await sessionStatus(cookie), 200);
  const r = await adminCall(c.server.url, '/v1/admin/operator/remove', { token: admin, json: { name: 'rene' } });
  assert.deepEqual([r.status, r.body.sessionsEnded], [200, 1]);
  assert.equal(sessionsOf('rene'), 0);
  assert.deepEqual([await sessionStatus(cookie), await apiStatus(cookie), await bearerStatus(token)], [401, 401, 401]);
});

test("an operator's sessions end also when the local CLI's operation removes it (the same operation)", async () => {
  const token = await addOperator(c.store, 'lena', 'viewer');
  const cookie = await login(token);
  await runOperation({ store: c.store, actor: localActor(), artifactsDir: artifactsDirOf(c.dbFile) }, operatorRemove, { name: 'lena' });
  assert.equal(await sessionStatus(cookie), 401);
});
