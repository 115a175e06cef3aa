// Every admin route (docs/design.md §12): 401 without a token, 403 for a role too low (a denial in the
// audit log, nothing changed), 200 for the right one, and every change in the audit log with
// the operator who made it. The routes come from the operations table, so a route added
// without a case here fails its own test.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPair } from '../../src/platform/keys.js';
import { releaseKeyOf } from '../../src/control/catalog/add-release.js';
import { signDowngrade } from '../../src/control/catalog/allow-downgrade.js';
import { methodOf, routeOf } from '../../src/control/operations/operation.js';
import { OPERATIONS } from '../../src/control/operations/operations.js';
import { ROLES } from '../../src/control/operators/roles.js';
import type { OperatorRole } from '../../src/control/store/store.js';
import { startHookReceiver, type HookReceiver } from '../helpers/hook-receiver.js';
import { addOperator, adminCall, signedRelease, uploadBody, type AdminRequest } from '../helpers/admin-client.js';
import { dumpStore, enrollNodes, startControlInProcess, type Control, type FakeNode } from '../helpers/control-harness.js';

let c: Control;
let nodes: FakeNode[];
const tokens: Record<OperatorRole, string> = { viewer: '', operator: '', admin: '' };
const names: Record<OperatorRole, string> = { viewer: 'vera', operator: 'olga', admin: 'adam' };
const state: { tokenId?: string } = {};

let receiver: HookReceiver;

before(async () => {
  receiver = await startHookReceiver();
  c = await startControlInProcess({ admin: {} });
  for (const role of ROLES) tokens[role] = await addOperator(c.store, names[role], role);
  nodes = await enrollNodes(c, 2);
  for (const n of nodes) assert.equal((await n.heartbeat()).status, 200);
  await c.addRelease('web', '1.1.0');
});
after(async () => {
  await c.close();
  await receiver.close();
});

interface Case {
  route: string;
  // The request the right role makes (the others make the same one).
  request: () => AdminRequest;
  check?: (body: any) => void;
  // What the state needs first, made by the test itself (not through the route).
  prepare?: () => Promise<void>;
}

const get = (query: Record<string, string> = {}): AdminRequest => ({ method: 'GET', headers: {}, ...(Object.keys(query).length ? { query } : {}) }) as AdminRequest;
const post = (json: unknown): AdminRequest => ({ method: 'POST', json });
const withQuery = (route: string, r: AdminRequest & { query?: Record<string, string> }) => (r.query ? `${route}?${new URLSearchParams(r.query)}` : route);

// In order: each may rest on the state the ones before left.
const CASES: Case[] = [
  { route: '/v1/admin/token/list', request: () => get() },
  { route: '/v1/admin/token/create', request: () => post({ ttl: '1h', label: ['env=prod'] }), check: (b) => (state.tokenId = b.id) },
  { route: '/v1/admin/token/revoke', request: () => post({ id: state.tokenId }) },
  { route: '/v1/admin/nodes', request: () => get({ limit: '1' }), check: (b) => assert.equal(typeof b.nextCursor, 'string', 'one of two nodes: a next page') },
  { route: '/v1/admin/nodes/label', request: () => post({ args: [nodes[0]!.nodeId, 'tier=web'] }) },
  { route: '/v1/admin/receipts', request: () => get() },
  { route: '/v1/admin/release/list', request: () => get({ app: 'web' }) },
  { route: '/v1/admin/keys/list', request: () => get() },
  { route: '/v1/admin/keys/allow', request: () => post({ app: 'web', publicKey: generateKeyPair().publicPem }) },
  {
    route: '/v1/admin/release/add',
    request: () => {
      const bytes = Buffer.from('web 1.2.0 tarball');
      return { method: 'POST', raw: uploadBody(signedRelease(c.releaseKey.privatePem, 'web', '1.2.0', bytes, c.clock.now(), c.server.url), bytes) };
    },
    check: (b) => assert.deepEqual([b.change, b.keyId], ['added', c.releaseKey.keyId]),
  },
  {
    route: '/v1/admin/release/allow-downgrade',
    request: () => post({ ...signDowngrade({ app: 'web', version: '1.1.0', key: releaseKeyOf(c.releaseKey.privatePem), expiresDays: 7, now: c.clock.now() }) }),
    check: (b) => assert.deepEqual([b.app, b.version, b.keyId], ['web', '1.1.0', c.releaseKey.keyId]),
  },
  { route: '/v1/admin/rollout/status', request: () => get() },
  { route: '/v1/admin/rollout/list', request: () => get() },
  { route: '/v1/admin/rollout/start', request: () => post({ app: 'web', version: '1.1.0', canaries: 0, batch: '100%', bake: '0' }), check: (b) => assert.equal(b.status, 'running') },
  { route: '/v1/admin/rollout/pause', request: () => post({ app: 'web' }), check: (b) => assert.equal(b.status, 'paused') },
  { route: '/v1/admin/rollout/resume', request: () => post({ app: 'web' }) },
  { route: '/v1/admin/rollout/stop', request: () => post({ app: 'web' }), check: (b) => assert.equal(b.status, 'stopped') },
  { route: '/v1/admin/rollout/retry', request: () => post({ app: 'web', dryRun: true }), check: (b) => assert.equal(b.dryRun, true) },
  { route: '/v1/admin/target/set', request: () => post({ name: 'prod', app: 'web', version: '1.1.0', canaries: 0, batch: '100%', bake: '0' }), check: (b) => assert.equal(b.name, 'prod') },
  { route: '/v1/admin/target/list', request: () => get(), check: (b) => assert.deepEqual(b.targets.map((t: { name: string }) => t.name), ['prod']) },
  { route: '/v1/admin/target/status', request: () => get({ name: 'prod' }), check: (b) => assert.ok(Array.isArray(b.nodes)) },
  { route: '/v1/admin/target/pause', request: () => post({ name: 'prod' }), check: (b) => assert.equal(b.status, 'paused') },
  { route: '/v1/admin/target/resume', request: () => post({ name: 'prod' }) },
  {
    route: '/v1/admin/target/revert',
    // The target's run changed both nodes (from web 1.0.0, which the catalog holds).
    prepare: async () => {
      await c.addRelease('web', '1.0.0');
      for (const n of nodes) await n.answer('active');
      await c.server.tick();
    },
    request: () => post({ name: 'prod' }), check: (b) => assert.equal(typeof b.revertRun, 'number') },
  { route: '/v1/admin/target/remove', request: () => post({ name: 'prod' }), check: (b) => assert.equal(b.removed, 'prod') },
  { route: '/v1/admin/nodes/pin', request: () => post({ nodeId: nodes[0]!.nodeId, pin: 'web=1.1.0', reason: 'INC-1' }), check: (b) => assert.equal(b.pin.reason, 'INC-1') },
  { route: '/v1/admin/nodes/unpin', request: () => post({ nodeId: nodes[0]!.nodeId, app: 'web' }) },
  { route: '/v1/admin/release/remove', request: () => post({ app: 'web', version: '1.2.0' }) },
  { route: '/v1/admin/nodes/remove', request: () => post({ nodeId: nodes[1]!.nodeId }) },
  { route: '/v1/admin/operator/list', request: () => get() },
  { route: '/v1/admin/operator/add', request: () => post({ name: 'temp', role: 'viewer' }), check: (b) => assert.match(b.token, /^so_[A-Za-z0-9_-]{32}$/) },
  { route: '/v1/admin/operator/rotate', request: () => post({ name: 'temp' }) },
  { route: '/v1/admin/operator/remove', request: () => post({ name: 'temp' }) },
  { route: '/v1/admin/audit', request: () => get() },
  {
    route: '/v1/admin/hook/add',
    request: () => post({ name: 'pager', url: receiver.url, events: 'run.halted,target.behind', secret: 'a-secret-of-at-least-16' }),
    check: (b) => assert.deepEqual([b.name, b.events, 'secret' in b], ['pager', ['run.halted', 'target.behind'], false]),
  },
  { route: '/v1/admin/hook/list', request: () => get(), check: (b) => assert.ok(!JSON.stringify(b).includes('a-secret-of-at-least-16')) },
  { route: '/v1/admin/hook/test', request: () => post({ name: 'pager' }), check: (b) => assert.deepEqual([b.delivered, b.status], [true, 204]) },
  { route: '/v1/admin/hook/remove', request: () => post({ name: 'pager' }), check: (b) => assert.equal(b.removed, 'pager') },
];

const call = (route: string, r: AdminRequest & { query?: Record<string, string> }, token?: string) => adminCall(c.server.url, withQuery(route, r), { ...r, ...(token ? { token } : {}) });
const auditIds = async () => (dumpStore(c.store).audit as Array<{ id: number }>).length;
const entriesAfter = (n: number) => (dumpStore(c.store).audit as Array<{ operator: string | null; action: string; target: string | null; source: string | null }>).slice(n);

// The routes come from the operations table, in the order of their cases (a route with no case
// last, where its test fails).
const order = (route: string) => {
  const i = CASES.findIndex((k) => k.route === route);
  return i < 0 ? CASES.length : i;
};
const ROUTES = OPERATIONS.map((op) => ({ op, route: routeOf(op) })).sort((a, b) => order(a.route) - order(b.route));

for (const { op, route } of ROUTES) {
  test(`${methodOf(op)} ${route}: 401 without a token, 403 below ${op.role}, 200 for ${op.role}${op.action ? `, audited as ${op.action}` : ''}`, async () => {
    const k = CASES.find((x) => x.route === route);
    assert.ok(k, `${route} (\`${op.command}\`) has a case in CASES`);
    await k.prepare?.();
    const r = k.request();
    assert.equal(r.method, methodOf(op));

    const none = await call(route, r);
    assert.deepEqual([none.status, none.body.error.code], [401, 'UNAUTHENTICATED']);

    const below = ROLES.slice(0, ROLES.indexOf(op.role));
    for (const role of below) {
      const before = dumpStore(c.store);
      const denied = await call(route, r, tokens[role]);
      assert.deepEqual([denied.status, denied.body.error.code], [403, 'FORBIDDEN'], `${role} on ${route}`);
      const after = dumpStore(c.store);
      const added = (after.audit as unknown[]).slice((before.audit as unknown[]).length);
      assert.deepEqual(added.map((e: any) => [e.operator, e.action, e.target]), [[names[role], 'denied', route]], 'the denial is audited, with who');
      assert.deepEqual({ ...after, audit: [] }, { ...before, audit: [] }, 'a denial changes nothing else');
    }

    const seen = await auditIds();
    const ok = await call(route, r, tokens[op.role]);
    assert.equal(ok.status, 200, `${op.role} on ${route}: ${JSON.stringify(ok.body)}`);
    k.check?.(ok.body);
    const entries = entriesAfter(seen);
    const dryRun = (r.json as { dryRun?: boolean } | undefined)?.dryRun === true;
    if (op.action && !dryRun) assert.deepEqual(entries.map((e) => [e.operator, e.action, e.source]), [[names[op.role], op.action, '127.0.0.1']], 'the change is audited once, with its operator and source');
    else assert.deepEqual(entries, [], 'a read (or a dry run) records nothing');
  });
}

test('every case names an admin route', () => {
  const routes = new Set(OPERATIONS.map(routeOf));
  assert.deepEqual(CASES.map((k) => k.route).filter((r) => !routes.has(r)), []);
});

test('a wrong token is 401 and audited as a failed authentication, with its source', async () => {
  const seen = await auditIds();
  const r = await adminCall(c.server.url, '/v1/admin/nodes', { token: 'so_' + 'A'.repeat(32) });
  assert.deepEqual([r.status, r.body.error.code, r.headers['www-authenticate']], [401, 'UNAUTHENTICATED', 'Bearer']);
  const [e] = (dumpStore(c.store).audit as Array<{ operator: string | null; action: string; source: string }>).slice(seen);
  assert.deepEqual([e?.operator, e?.action, e?.source], [null, 'auth.failed', '127.0.0.1']);
});

test('errors carry the codes of the CLI: a bad selector is 400 USAGE, an unknown run 404 NOT_FOUND, a bad cursor 400 USAGE, a wrong method 405', async () => {
  const bad = await adminCall(c.server.url, '/v1/admin/nodes?select=' + encodeURIComponent('env in (a'), { token: tokens.viewer });
  assert.deepEqual([bad.status, bad.body.error.code], [400, 'USAGE']);
  const unknown = await adminCall(c.server.url, '/v1/admin/rollout/pause', { token: tokens.operator, json: { app: 'api' } });
  assert.deepEqual([unknown.status, unknown.body.error.code], [404, 'NOT_FOUND']);
  const cursor = await adminCall(c.server.url, '/v1/admin/nodes?cursor=bm90LWEtY3Vyc29y', { token: tokens.viewer });
  assert.deepEqual([cursor.status, cursor.body.error.code], [400, 'USAGE']);
  const extra = await adminCall(c.server.url, '/v1/admin/token/create', { token: tokens.operator, json: { ttl: '1h', colour: 'red' } });
  assert.deepEqual([extra.status, extra.body.error.code], [400, 'USAGE'], 'an unknown field is refused, not ignored');
  const method = await adminCall(c.server.url, '/v1/admin/nodes', { token: tokens.viewer, json: {} });
  assert.deepEqual([method.status, method.headers.allow], [405, 'GET']);
  const route = await adminCall(c.server.url, '/v1/admin/nope', { token: tokens.viewer });
  assert.deepEqual([route.status, route.body.error.code], [404, 'NOT_FOUND']);
});

test('pages follow their cursors to the end: every node once, in order', async () => {
  const more = await enrollNodes(c, 3);
  const seen: string[] = [];
  let cursor: string | null = '';
  while (cursor !== null) {
    const r = await adminCall(c.server.url, `/v1/admin/nodes?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { token: tokens.viewer });
    assert.equal(r.status, 200);
    assert.ok(r.body.nodes.length <= 2);
    seen.push(...r.body.nodes.map((n: { nodeId: string }) => n.nodeId));
    cursor = r.body.nextCursor;
  }
  const all = (await c.store.read((tx) => tx.nodes.list())).map((n) => n.nodeId);
  assert.deepEqual(seen, all);
  assert.ok(more.every((n) => seen.includes(n.nodeId)));
});
