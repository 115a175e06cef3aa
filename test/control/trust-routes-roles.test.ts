// Who may change a fleet's trust (docs/admin-api.md, "Trust"; docs/design.md §12): every trust
// route that changes something needs the admin role. An operator (who runs rollouts) may read the
// trust status but may neither publish an app's delegated targets (`PUT /v1/admin/trust/apps/{app}`),
// nor put or sign a pending root or top-level targets (which would change an app's delegation:
// its keys and threshold), nor make the online keys; each attempt is 403 FORBIDDEN, changes
// nothing and is audited `denied`. The same requests by an admin go through, so it is the role
// that refuses, not the metadata. The operations that vouch for releases (release add,
// allow-downgrade, keys allow) are admin's too.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { addReleaseTargets, delegateApp, newTopTargets, rotateRoot } from '../../src/core/trust/build.js';
import { TRUST_ROUTES } from '../../src/control/admin/trust-routes.js';
import { OPERATIONS } from '../../src/control/operations/operations.js';
import { tufKeyOf } from '../../src/platform/trust/tuf-keys.js';
import { addOperator, adminCall } from '../helpers/admin-client.js';
import { FakeClock, startControlInProcess, type Control } from '../helpers/control-harness.js';
import { manifestBytesOf, newKey } from '../helpers/tuf-repo.js';
import { atVersion, postSignatures, putMetadata, seedRepository, signaturesOf, signedBy, type SeededRepository } from '../helpers/trust-admin.js';

const DAY = 86_400_000;
let c: Control;
let admin: string;
let operator: string;
let viewer: string;
let seeded: SeededRepository;

before(async () => {
  c = await startControlInProcess({ admin: {}, clock: new FakeClock(Date.now()) });
  admin = await addOperator(c.store, 'ada', 'admin');
  operator = await addOperator(c.store, 'otto', 'operator');
  viewer = await addOperator(c.store, 'vera', 'viewer');
  seeded = await seedRepository(c.store, c.clock.now());
});
after(() => c.close());

const status = async (token: string) => {
  const r = await adminCall(c.server.url, '/v1/admin/trust', { token });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
};
const denied = async () => (await c.store.read((tx) => tx.audit.page(0, 0, 1000))).filter((a) => a.action === 'denied');

test('the trust routes that change anything need the admin role; reading the status needs viewer', () => {
  for (const r of TRUST_ROUTES) assert.equal(r.role, r.method === 'GET' ? 'viewer' : 'admin', `${r.method} ${r.path}`);
  for (const command of ['release add', 'release allow-downgrade', 'release remove', 'keys allow', 'operator add']) {
    assert.equal(OPERATIONS.find((o) => o.command === command)?.role, 'admin', command);
  }
});

test("an operator cannot publish an app's targets, change its delegation, sign or put a root, or make online keys; an admin can", async () => {
  const before = await status(operator);
  const webVersion = seeded.web.signed.version;
  assert.deepEqual([before.targets.version, before.apps.find((a: { app: string }) => a.app === 'web').version, before.root.version], [1, webVersion, 1]);
  const now = c.clock.now();
  // web's next targets, signed by two of web's three keys: valid.
  const web2 = signedBy(atVersion(addReleaseTargets(seeded.web, { app: 'web', version: '6.6.6', manifestBytes: manifestBytesOf('web', '6.6.6', now) }), webVersion + 1), seeded.webKeys.slice(0, 2));
  // Top-level targets v2 that delegate web to keys the operator holds, signed by the root's targets keys.
  const mine = [newKey(), newKey(), newKey()];
  const targets2 = signedBy(atVersion(delegateApp(newTopTargets({ expires: now + 365 * DAY }), 'web', mine.map(tufKeyOf), 1), 2), seeded.rootKeys.slice(0, 2));
  // A root v2 signed by one key: pending until a second signs.
  const root2 = signedBy(rotateRoot(seeded.root, { expires: now + 365 * DAY }), seeded.rootKeys.slice(0, 1));

  const attempts: Array<[string, (token: string) => ReturnType<typeof adminCall>]> = [
    ['PUT apps/web', (t) => putMetadata(c.server.url, t, '/v1/admin/trust/apps/web', web2)],
    ['PUT pending/targets', (t) => putMetadata(c.server.url, t, '/v1/admin/trust/pending/targets', targets2)],
    ['PUT pending/root', (t) => putMetadata(c.server.url, t, '/v1/admin/trust/pending/root', root2)],
    ['POST pending/root/signatures', (t) => postSignatures(c.server.url, t, 'root', signaturesOf(root2, seeded.rootKeys.slice(1, 2)))],
    ['POST online-keys', (t) => adminCall(c.server.url, '/v1/admin/trust/online-keys', { method: 'POST', token: t, json: {} })],
  ];
  const deniedBefore = (await denied()).length;
  for (const [what, call] of attempts) {
    for (const [who, token] of [['operator', operator], ['viewer', viewer]] as const) {
      const r = await call(token);
      assert.deepEqual([r.status, r.body.error?.code], [403, 'FORBIDDEN'], `${who}: ${what}: ${JSON.stringify(r.body)}`);
      assert.match(r.body.error.message, /needs the admin role/, what);
    }
  }
  assert.deepEqual(await status(viewer), before, 'nothing changed');
  const d = (await denied()).slice(deniedBefore);
  assert.equal(d.length, 2 * attempts.length, 'each attempt audited denied');
  assert.ok(d.some((a) => a.operator === 'otto' && JSON.stringify(a.details).includes('PUT /v1/admin/trust/apps/{app}')), JSON.stringify(d[0]));

  // The same metadata by an admin: taken.
  const app = await putMetadata(c.server.url, admin, '/v1/admin/trust/apps/web', web2);
  assert.equal(app.status, 200, JSON.stringify(app.body));
  const top = await putMetadata(c.server.url, admin, '/v1/admin/trust/pending/targets', targets2);
  assert.deepEqual([top.status, top.body.published], [200, true], JSON.stringify(top.body));
  const root = await putMetadata(c.server.url, admin, '/v1/admin/trust/pending/root', root2);
  assert.equal(root.status, 200, JSON.stringify(root.body));
  const signed = await postSignatures(c.server.url, admin, 'root', signaturesOf(root2, seeded.rootKeys.slice(1, 2)));
  assert.deepEqual([signed.status, signed.body.published], [200, true], JSON.stringify(signed.body));
  const after = await status(viewer);
  assert.deepEqual([after.targets.version, after.root.version, after.apps.find((a: { app: string }) => a.app === 'web').version], [2, 2, webVersion + 1]);
});
