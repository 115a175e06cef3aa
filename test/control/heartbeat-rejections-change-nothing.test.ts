// Every rejected heartbeat answers its status and code over real HTTP and leaves every table of
// the store exactly as it was (docs/design.md §6: "rejected whole and changes nothing"), but one: a
// heartbeat refused for clock skew records that refusal on its node (three columns of its row,
// issue 31), and nothing else.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { HEARTBEAT_PATH, MAX_BODY_BYTES } from '../../src/core/control-api.js';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { DOMAINS } from '../../src/platform/keys.js';
import { startRun, stopRun } from '../../src/control/rollouts/start-run.js';
import { describeRun } from '../../src/control/rollouts/run-status.js';
import { dumpStore, FakeNode, MINUTE, post, startControlInProcess, type Control } from '../helpers/control-harness.js';

let c: Control;
let a: FakeNode;
let b: FakeNode;
let issuedToB = '';
let issuedToA = '';

before(async () => {
  c = await startControlInProcess();
  a = await new FakeNode(c, 'host-a').enroll();
  b = await new FakeNode(c, 'host-b').enroll();
  a.setCurrent('web', '1.0.0');
  b.setCurrent('web', '1.0.0');
  assert.equal((await a.heartbeat()).status, 200);
  assert.equal((await b.heartbeat()).status, 200);
  await c.addRelease('web', '1.1.0');
  // Earlier runs: run 1 issues to node b, run 2 to node a; both stop. Run 3 (to node a) runs.
  await startRun(c.store, 'web', '1.1.0', { canary: [b.nodeId] });
  issuedToB = (c.store.db.prepare('SELECT attemptId FROM issued WHERE nodeId = ?').get(b.nodeId) as { attemptId: string }).attemptId;
  await stopRun(c.store, 'web');
  await startRun(c.store, 'web', '1.1.0', { canary: [a.nodeId] });
  issuedToA = (c.store.db.prepare('SELECT attemptId FROM issued WHERE nodeId = ?').get(a.nodeId) as { attemptId: string }).attemptId;
  await stopRun(c.store, 'web');
  await startRun(c.store, 'web', '1.1.0', { canary: [a.nodeId] });
  // A stored receipt of node a under seq 1 (an operator's update).
  assert.equal((await a.heartbeat({ receipts: [a.receipt({ seq: 1, attemptId: 'cli-1' })] })).status, 200);
});

after(() => c.close());

const lastSeqOf = (n: FakeNode) => (c.store.db.prepare('SELECT lastSeq FROM nodes WHERE nodeId = ?').get(n.nodeId) as { lastSeq: number }).lastSeq;

// The nodes columns a clock skew refusal writes (store migration 5).
const SKEW_COLUMNS = ['skewRefusedSince', 'skewRefusedAt', 'skewRefusedMs'];

// The store without those columns, and what they hold for node `n`.
function withoutSkewColumns(d: Record<string, unknown[]>): Record<string, unknown[]> {
  return { ...d, nodes: d.nodes!.map((r) => Object.fromEntries(Object.entries(r as Record<string, unknown>).filter(([k]) => !SKEW_COLUMNS.includes(k)))) };
}
const skewColumnsOf = (n: FakeNode) => c.store.db.prepare(`SELECT ${SKEW_COLUMNS.join(', ')} FROM nodes WHERE nodeId = ?`).get(n.nodeId);

const rejections: Array<{ name: string; body: () => string | Buffer; status: number; code: string; extra?: () => Record<string, unknown>; recordsSkew?: true }> = [
  { name: 'a replayed seq', body: () => a.body({ seq: 1 }), status: 409, code: 'SEQ_REPLAYED', extra: () => ({ lastSeq: lastSeqOf(a) }) },
  { name: 'sentAt 10 minutes off', body: () => a.body({ sentAt: c.clock.now() - 10 * MINUTE }), status: 422, code: 'CLOCK_SKEW', extra: () => ({ serverTime: c.clock.now() }), recordsSkew: true },
  { name: 'a wrong domain', body: () => a.body({}, a.node.privateKey, DOMAINS.receipt), status: 401, code: 'BAD_SIGNATURE' },
  { name: "another node's signature", body: () => a.body({}, b.node.privateKey), status: 401, code: 'BAD_SIGNATURE' },
  { name: 'an unknown node', body: () => a.body({ nodeId: 'n-000000000000' }), status: 401, code: 'UNKNOWN_NODE' },
  {
    name: 'a receipt altered after signing',
    body: () => {
      const r = a.receipt({ seq: 2 });
      const p = JSON.parse(Buffer.from(r.payload, 'base64').toString()) as Record<string, unknown>;
      return a.body({ receipts: [{ ...r, payload: canonicalBytes({ ...p, outcome: 'rolled-back' }).toString('base64') }] });
    },
    status: 400,
    code: 'RECEIPT_REJECTED',
  },
  { name: "another node's receipt", body: () => a.body({ receipts: [b.receipt({ seq: 2 })] }), status: 400, code: 'RECEIPT_REJECTED' },
  { name: 'a receipt whose attemptId an earlier run issued to another node', body: () => a.body({ receipts: [a.receipt({ seq: 2, attemptId: issuedToB })] }), status: 400, code: 'RECEIPT_REJECTED' },
  { name: 'a receipt whose attemptId an earlier run issued for another version', body: () => a.body({ receipts: [a.receipt({ seq: 2, attemptId: issuedToA, targetVersion: '1.2.0' })] }), status: 400, code: 'RECEIPT_REJECTED' },
  { name: 'a conflicting envelope for an already-stored seq', body: () => a.body({ receipts: [a.receipt({ seq: 1, attemptId: 'cli-2' })] }), status: 400, code: 'RECEIPT_REJECTED' },
  { name: 'a body over 1 MiB', body: () => Buffer.alloc(MAX_BODY_BYTES + 1, 0x20), status: 400, code: 'BAD_BODY' },
  { name: 'invalid JSON', body: () => '{"payload": ', status: 400, code: 'BAD_BODY' },
  { name: 'a signed payload that is not a heartbeat', body: () => a.body({ apps: 'none' }), status: 400, code: 'BAD_BODY' },
];

for (const r of rejections) {
  test(`a heartbeat with ${r.name} is answered ${r.status} ${r.code} and changes nothing in the store${r.recordsSkew ? ' but the refusal on its node' : ''}`, async () => {
    const before = dumpStore(c.store);
    const answer = await post(c.server.url, HEARTBEAT_PATH, r.body());
    assert.equal(answer.status, r.status, JSON.stringify(answer.body));
    assert.equal(answer.body.error.code, r.code);
    assert.ok(answer.body.error.message.length > 0);
    for (const [k, v] of Object.entries(r.extra?.() ?? {})) assert.equal(answer.body[k], v, k);
    if (!r.recordsSkew) return assert.deepEqual(dumpStore(c.store), before);
    assert.deepEqual(withoutSkewColumns(dumpStore(c.store)), withoutSkewColumns(before));
    const now = c.clock.now();
    assert.deepEqual(skewColumnsOf(a), { skewRefusedSince: now, skewRefusedAt: now, skewRefusedMs: -10 * MINUTE });
  });
}

test('the control case: a good heartbeat of node a is accepted and recorded', async () => {
  const before = dumpStore(c.store);
  const answer = await a.heartbeat();
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  assert.notDeepEqual(dumpStore(c.store), before);
});

test('an identical replay of a stored receipt of an earlier run is acked, not stored again, and does not count for the current run', async () => {
  const d = await startControlInProcess();
  try {
    const n = await new FakeNode(d, 'host-n').enroll();
    n.setCurrent('web', '1.0.0');
    await n.heartbeat();
    await d.addRelease('web', '1.1.0');
    await startRun(d.store, 'web', '1.1.0', {});
    const first = await n.heartbeat();
    const attempt = first.body.desired[0].attemptId as string;
    const reverted = n.receipt({ attemptId: attempt, targetVersion: '1.1.0', outcome: 'rolled-back', reason: { code: 'REPLACEMENT_UNHEALTHY', message: 'probe failed' } });
    assert.deepEqual((await n.heartbeat({ receipts: [reverted] })).body.ackedSeqs, [1]);
    assert.equal((await d.store.read(async (tx) => describeRun(tx, (await tx.runs.latest('web'))!))).status, 'halted');

    await startRun(d.store, 'web', '1.1.0', { allowRetryReverted: true });
    const receiptsBefore = dumpStore(d.store).receipts;
    const again = await n.heartbeat({ receipts: [reverted] });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.deepEqual(again.body.ackedSeqs, [1]);
    assert.deepEqual(dumpStore(d.store).receipts, receiptsBefore);
    const run2 = (await d.store.read(async (tx) => describeRun(tx, (await tx.runs.latest('web'))!)));
    assert.equal(run2.status, 'running');
    assert.equal(run2.nodes[0]?.state, 'issued');
    assert.notEqual(run2.nodes[0]?.attemptId, attempt);
    assert.deepEqual(again.body.desired.map((x: { attemptId: string }) => x.attemptId), [run2.nodes[0]?.attemptId]);
  } finally {
    await d.close();
  }
});
