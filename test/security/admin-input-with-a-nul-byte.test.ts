// A NUL character in what an operator sends (a node id, a filter, a selector, a cursor, an id,
// a name) is a 400 USAGE on both backends: before, PostgreSQL's text refused it inside the query
// and the admin API answered 500, where SQLite answered 404 or 200. One check at the operations'
// boundary (parseInput, and decodeCursor for what a cursor decodes to) refuses it before any
// backend sees it. Every admin route is tried over HTTP, with every field of its input, and the
// realistic cases with their own types: a node id to remove or label, a receipts node filter, a
// selector, forged cursors of each paged route, a token id, an operator name, an uploaded
// release's app. And the fleet protocol's own ids: a heartbeat claiming a nodeId with a NUL is
// 401 UNKNOWN_NODE (as SQLite answered; PostgreSQL answered 500), an enrolled node's signed
// heartbeat with a NUL in its bootId is 400 BAD_BODY.
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { localActor } from '../../src/control/audit/record-audit.js';
import { methodOf, routeOf, type Operation } from '../../src/control/operations/operation.js';
import { operatorAdd } from '../../src/control/operations/operator-ops.js';
import { OPERATIONS, runOperation } from '../../src/control/operations/operations.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { adminCall, signedRelease, uploadBody, type AdminAnswer } from '../helpers/admin-client.js';
import { enrollNodes, startControlOn, type Control } from '../helpers/control-harness.js';
import { describeEachBackend } from '../helpers/store-backends.js';
import path from 'node:path';

const NUL = 'n-\u0000x';
const cursorOf = (at: unknown) => Buffer.from(JSON.stringify(at), 'utf8').toString('base64url');

function refusedForNul(a: AdminAnswer, what: string, message = /NUL character/): void {
  assert.equal(a.status, 400, `${what}: ${JSON.stringify(a.body)}`);
  assert.equal(a.body?.error?.code, 'USAGE', `${what}: ${JSON.stringify(a.body)}`);
  assert.match(a.body.error.message, message, what);
}

describeEachBackend((backend) => {
  let c: Control<ControlStore> | null = null;
  afterEach(async () => {
    await c?.close();
    c = null;
  });

  async function control(): Promise<{ c: Control<ControlStore>; token: string; call: (route: string, o: { query?: Record<string, string>; json?: unknown; raw?: Buffer }) => Promise<AdminAnswer> }> {
    c = await startControlOn(backend, { admin: {} });
    const made = await runOperation({ store: c.store, actor: localActor(), artifactsDir: path.join(c.dir, 'artifacts') }, operatorAdd, { name: 'adam', role: 'admin' });
    const nodes = await enrollNodes(c, 2);
    for (const n of nodes) assert.equal((await n.heartbeat()).status, 200);
    await c.addRelease('web', '1.1.0');
    const url = c.server.url;
    const call = (route: string, o: { query?: Record<string, string>; json?: unknown; raw?: Buffer }) =>
      adminCall(url, o.query ? `${route}?${new URLSearchParams(o.query)}` : route, { token: made.token, ...(o.json !== undefined ? { json: o.json } : {}), ...(o.raw ? { raw: o.raw } : {}), ...(o.query || (o.json === undefined && !o.raw) ? { method: 'GET' } : {}) });
    return { c, token: made.token, call };
  }

  test('every field of every admin route refuses a NUL character with 400 USAGE naming the field', async () => {
    const { call } = await control();
    for (const op of OPERATIONS as Operation[]) {
      const shape = (op.input as unknown as z.ZodObject).shape as Record<string, unknown>;
      const route = routeOf(op);
      for (const field of Object.keys(shape)) {
        const a = op.upload
          ? await call(route, { raw: uploadBody({ app: 'web', version: '1.2.0', [field]: NUL }, Buffer.from('bytes')) })
          : methodOf(op) === 'GET'
            ? await call(route, { query: { [field]: NUL } })
            : await call(route, { json: { [field]: NUL } });
        refusedForNul(a, `${route} ${field}`, new RegExp(`${op.command}: ${field} holds a NUL character`));
      }
    }
  });

  test('node ids, filters, selectors, ids and names with a NUL are 400 USAGE, with the types each route takes', async () => {
    const { c, call } = await control();
    const cases: Array<[string, { query?: Record<string, string>; json?: unknown; raw?: Buffer }]> = [
      ['/v1/admin/nodes/remove', { json: { nodeId: NUL } }],
      ['/v1/admin/nodes/label', { json: { args: [NUL, 'tier=web'] } }],
      ['/v1/admin/nodes/label', { json: { args: ['tier=web'], select: `env=a\u0000b` } }],
      ['/v1/admin/nodes', { query: { select: `env=a\u0000b` } }],
      ['/v1/admin/receipts', { query: { node: NUL } }],
      ['/v1/admin/receipts', { query: { app: 'we\u0000b' } }],
      ['/v1/admin/token/revoke', { json: { id: 'abc\u0000' } }],
      ['/v1/admin/operator/remove', { json: { name: 'ad\u0000am' } }],
      ['/v1/admin/operator/rotate', { json: { name: 'ad\u0000am' } }],
      ['/v1/admin/release/list', { query: { app: 'we\u0000b' } }],
      ['/v1/admin/release/remove', { json: { app: 'web', version: '1.1.0\u0000' } }],
      ['/v1/admin/rollout/status', { query: { app: 'we\u0000b' } }],
      ['/v1/admin/rollout/start', { json: { app: 'web', version: '1.1.0', select: 'env=\u0000', canaries: 0, bake: '0' } }],
      ['/v1/admin/rollout/start', { json: { app: 'web', version: '1.1.0', canary: [NUL], bake: '0' } }],
      ['/v1/admin/release/add', { raw: uploadBody({ ...signedRelease(c.releaseKey.privatePem, 'web', '1.3.0', Buffer.from('x'), c.clock.now(), c.server.url), app: 'we\u0000b' }, Buffer.from('x')) }],
    ];
    for (const [route, o] of cases) refusedForNul(await call(route, o), `${route} ${JSON.stringify(o.query ?? o.json ?? 'upload')}`);
    // Nothing changed: no run started, both nodes and the release are there.
    assert.equal(await c.store.read((tx) => tx.runs.latest('web')), null);
    assert.equal((await c.store.read((tx) => tx.nodes.list())).length, 2);
    assert.equal((await c.store.read((tx) => tx.releases.list())).length, 1);
  });

  test('a forged cursor holding a NUL is refused 400 USAGE as any cursor this server did not give', async () => {
    const { call } = await control();
    const notGiven = /is not one this server gave/;
    refusedForNul(await call('/v1/admin/nodes', { query: { cursor: cursorOf(NUL) } }), 'nodes cursor', notGiven);
    refusedForNul(await call('/v1/admin/receipts', { query: { cursor: cursorOf([1, NUL, 1]) } }), 'receipts cursor', notGiven);
    // The paged reads still page with the cursors they give.
    const first = await call('/v1/admin/nodes', { query: { limit: '1' } });
    assert.equal(first.status, 200);
    const second = await call('/v1/admin/nodes', { query: { limit: '1', cursor: first.body.nextCursor } });
    assert.equal(second.status, 200, JSON.stringify(second.body));
    assert.equal(second.body.nodes.length, 1);
  });

  test('a heartbeat claiming a nodeId with a NUL is 401 UNKNOWN_NODE, and a NUL in a signed bootId 400 BAD_BODY, storing nothing', async () => {
    c = await startControlOn(backend, {});
    const [n] = await enrollNodes(c, 1);
    assert.equal((await n!.heartbeat()).status, 200);
    const lastSeq = async () => (await c!.store.read((tx) => tx.nodes.list()))[0]!.lastSeq;
    const before = await lastSeq();
    const claimed = await n!.heartbeat({ nodeId: NUL });
    assert.deepEqual([claimed.status, claimed.body.error?.code], [401, 'UNKNOWN_NODE'], JSON.stringify(claimed.body));
    const boot = await n!.heartbeat({ bootId: 'boot\u0000' });
    assert.deepEqual([boot.status, boot.body.error?.code], [400, 'BAD_BODY'], JSON.stringify(boot.body));
    assert.equal(await lastSeq(), before, 'neither was recorded');
    assert.equal((await n!.heartbeat()).status, 200, 'the node heartbeats on');
  });
});
