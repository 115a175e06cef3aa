// docs/design.md §18, wake-ups: a node's `GET /v1/wait` is answered as soon as its desired set
// changes (a run issuing to it, a halt, a stop, a pause), and only then: the server's clock is a
// fake one that never moves here, so a wait answered `woken` was answered by the change, not by
// its timeout. A node not concerned keeps waiting; a change made while the node held no wait is
// kept for its next one.
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { pauseRun, startRun, stopRun } from '../../src/control/rollouts/start-run.js';
import { desiredChanged } from '../../src/control/rollouts/desired-changed.js';
import { enrollNodes, type Control, type FakeNode, startControlInProcess } from '../helpers/control-harness.js';
import { pause, sendWait, waitAuth, type PendingWait } from '../helpers/wait-client.js';

let c: Control;
let nodes: FakeNode[];

beforeEach(async () => {
  c = await startControlInProcess({ heartbeatSeconds: 30 });
  nodes = await enrollNodes(c, 3);
  for (const n of nodes) assert.equal((await n.heartbeat()).status, 200);
  await c.addRelease('web', '1.1.0');
});
afterEach(() => c.close());

const waitOf = (n: FakeNode): PendingWait => sendWait(c.server.url, waitAuth(n.nodeId, n.node.privateKey, c.clock.now()), '?timeout=60');

// Resolves once the wait has been held a moment (it reached the server's registry).
async function held(w: PendingWait): Promise<PendingWait> {
  await pause(150);
  assert.equal(w.answered(), false, 'the wait is held');
  return w;
}

test('a run that issues to a node answers its held wait woken, and the next heartbeat carries the new entry', async () => {
  const [canary, other] = nodes as [FakeNode, FakeNode];
  const wCanary = await held(waitOf(canary));
  const wOther = await held(waitOf(other));
  await startRun(c.store, 'web', '1.1.0', { canary: [canary.nodeId], batch: '1', bakeMs: 0 });
  const a = await wCanary.answer;
  assert.deepEqual([a.status, a.body], [200, { woken: true }]);
  const hb = await canary.heartbeat();
  assert.equal(hb.body.desired.length, 1);
  // The other node's set did not change: it still waits, and learns nothing.
  await pause(200);
  assert.equal(wOther.answered(), false);
  // Its wait runs out when the (fake) clock passes 60 s: not woken.
  c.clock.advance(60_000);
  assert.deepEqual((await wOther.answer).body, { woken: false });
});

test('the ticker issuing the next batch wakes the nodes of that batch', async () => {
  const [canary, second] = nodes as [FakeNode, FakeNode];
  await startRun(c.store, 'web', '1.1.0', { canary: [canary.nodeId], batch: '1', bakeMs: 0 });
  await canary.answer('active');
  const candidates = nodes.slice(1).map((n) => ({ n, w: waitOf(n) }));
  await pause(150);
  await c.server.tick();
  const issued = (await c.store.read((tx) => tx.runs.issued(1))).map((i) => i.nodeId);
  assert.equal(issued.length, 2, 'the canary and one node of batch 1');
  for (const { n, w } of candidates) {
    if (issued.includes(n.nodeId)) assert.deepEqual((await w.answer).body, { woken: true });
  }
  await pause(100);
  const waiting = candidates.filter(({ n }) => !issued.includes(n.nodeId));
  assert.equal(waiting.length, 1);
  assert.equal(waiting[0]!.w.answered(), false, 'the node the ticker did not issue to still waits');
  void second;
  c.clock.advance(60_000);
});

for (const change of ['stop', 'pause'] as const) {
  test(`rollout ${change} wakes the nodes in the middle of the run`, async () => {
    const [canary] = nodes as [FakeNode];
    await startRun(c.store, 'web', '1.1.0', { canary: [canary.nodeId], batch: '1', bakeMs: 0 });
    await canary.heartbeat();
    // The issue came while the canary held no wait: its first wait hears of it at once.
    assert.deepEqual((await waitOf(canary).answer).body, { woken: true });
    const w = await held(waitOf(canary));
    await (change === 'stop' ? stopRun(c.store, 'web') : pauseRun(c.store, 'web', true));
    assert.deepEqual((await w.answer).body, { woken: true });
    const hb = await canary.heartbeat();
    assert.equal(hb.body.desired.length, change === 'stop' ? 0 : 1, 'a stopped run is no longer asked of the node; a paused one keeps its issued attempt');
  });
}

test('a halt (the canary failed) wakes nothing it need not, and ends the run', async () => {
  const [canary, other] = nodes as [FakeNode, FakeNode];
  await startRun(c.store, 'web', '1.1.0', { canary: [canary.nodeId], batch: '1', bakeMs: 0 });
  const w = await held(waitOf(other));
  await canary.answer('failed', 'REPLACEMENT_UNHEALTHY');
  await c.server.tick();
  assert.equal((await c.store.read((tx) => tx.runs.get(1)))?.status, 'halted');
  await pause(150);
  assert.equal(w.answered(), false, 'a node that held no attempt of the run is not woken');
  c.clock.advance(60_000);
  assert.deepEqual((await w.answer).body, { woken: false });
});

test('a change made while the node held no wait answers its next wait at once', async () => {
  const [n] = nodes as [FakeNode];
  await c.store.write((tx) => desiredChanged(tx, [n.nodeId]));
  await pause(20);
  const first = waitOf(n);
  assert.deepEqual((await first.answer).body, { woken: true });
  // Heard once: the wait after it is held.
  await held(waitOf(n));
  c.clock.advance(60_000);
});

test('a change that rolls back wakes nobody', async () => {
  const [n] = nodes as [FakeNode];
  const w = await held(waitOf(n));
  await assert.rejects(c.store.write(async (tx) => {
    await desiredChanged(tx, [n.nodeId]);
    throw new Error('rolled back');
  }));
  await pause(150);
  assert.equal(w.answered(), false);
  c.clock.advance(60_000);
  assert.deepEqual((await w.answer).body, { woken: false });
});

test('closing the server answers its held waits 503, so that the agent waits on another instance', async () => {
  const [n] = nodes as [FakeNode];
  const w = await held(waitOf(n));
  await c.server.close();
  const a = await w.answer;
  assert.equal(a.status, 503);
  assert.equal(a.body.error.code, 'BUSY');
  assert.match(a.body.error.message, /shutting down/);
});
