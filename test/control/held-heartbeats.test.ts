// docs/design.md §18, wake-ups: the heartbeat as the node's long poll (HOLD_HEADER, docs/protocol.md).
// The heartbeat is recorded at once; its answer is held until the node's desired set changes or
// the asked seconds pass. The server's clock is a fake one that moves only when a test says, so a
// hold answered `woken` was answered by the change, not by its time.
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { heartbeatAnswerSchema, parseHoldHeader } from '../../src/core/control-api.js';
import { startRun, pauseRun } from '../../src/control/rollouts/start-run.js';
import { desiredDigest } from '../../src/control/wakeups/hold-heartbeat.js';
import { enrollNodes, type Control, type FakeNode, startControlInProcess } from '../helpers/control-harness.js';
import { pause, sendHeartbeat, type PendingWait } from '../helpers/wait-client.js';

let c: Control;
let nodes: FakeNode[];

beforeEach(async () => {
  c = await startControlInProcess({ heartbeatSeconds: 30 });
  nodes = await enrollNodes(c, 2);
  for (const n of nodes) assert.equal((await n.heartbeat()).status, 200);
  await c.addRelease('web', '1.1.0');
});
afterEach(() => c.close());

const heartbeat = (n: FakeNode, hold: string | undefined): PendingWait => sendHeartbeat(c.server.url, n.body(), hold);

// The digest the node would echo: the first held heartbeat's answer gives it.
async function seen(n: FakeNode): Promise<string> {
  const a = await heartbeat(n, '30').answer;
  assert.equal(a.status, 200);
  assert.equal(a.body.held, 'changed', 'a first hold (nothing seen yet) is answered at once');
  assert.equal(a.body.desiredDigest, desiredDigest(a.body.desired));
  return a.body.desiredDigest as string;
}

async function held(w: PendingWait): Promise<PendingWait> {
  await pause(150);
  assert.equal(w.answered(), false, 'the heartbeat is held');
  return w;
}

test('the hold header: seconds from 1 to 60 and an optional seen digest; anything else is no hold', () => {
  const d = 'a'.repeat(32);
  assert.deepEqual(parseHoldHeader('30'), { seconds: 30, seen: null });
  assert.deepEqual(parseHoldHeader(`60; seen=${d}`), { seconds: 60, seen: d });
  assert.deepEqual(parseHoldHeader(`1;seen=${d}`), { seconds: 1, seen: d });
  for (const bad of [undefined, '', '0', '61', '600', '-1', '30;', `30; seen=${d.toUpperCase()}`, `30; seen=${d}0`, '30 ; seen=x', `30; seen=${d}; more`, 'x'.repeat(200)]) {
    assert.equal(parseHoldHeader(bad), null, JSON.stringify(bad));
  }
  assert.equal(parseHoldHeader(['30', '30']), null, 'the header given twice');
});

test('a quiet node: its heartbeat is recorded at once, and answered `timeout` when its seconds pass', async () => {
  const [n] = nodes as [FakeNode];
  const digest = await seen(n);
  const before = await c.store.read((tx) => tx.nodes.get(n.nodeId));
  const w = await held(heartbeat(n, `30; seen=${digest}`));
  const during = await c.store.read((tx) => tx.nodes.get(n.nodeId));
  assert.ok(during!.lastSeq > before!.lastSeq, 'recorded before its answer');
  c.clock.advance(30_000);
  const a = await w.answer;
  assert.equal(a.status, 200);
  assert.equal(a.body.held, 'timeout');
  assert.equal(a.body.desiredDigest, digest);
  assert.ok(heartbeatAnswerSchema.safeParse(a.body).success, 'the contract the agent checks');
});

test('a run that issues to a held node answers it `woken`, with the new entry in that answer', async () => {
  const [canary, other] = nodes as [FakeNode, FakeNode];
  const wCanary = await held(heartbeat(canary, `30; seen=${await seen(canary)}`));
  const wOther = await held(heartbeat(other, `30; seen=${await seen(other)}`));
  await startRun(c.store, 'web', '1.1.0', { canary: [canary.nodeId], batch: '1', bakeMs: 0 });
  const a = await wCanary.answer;
  assert.equal(a.body.held, 'woken');
  assert.equal(a.body.desired.length, 1, 'read afresh when woken');
  assert.equal(a.body.desired[0].version, '1.1.0');
  assert.equal(a.body.desiredDigest, desiredDigest(a.body.desired));
  await pause(150);
  assert.equal(wOther.answered(), false, 'a node the change does not concern stays held');
  // The canary echoes the new digest: held again. A pause of the run changes its set (the
  // entry goes): woken again.
  const again = await held(heartbeat(canary, `30; seen=${a.body.desiredDigest}`));
  await pauseRun(c.store, 'web', true);
  const b = await again.answer;
  assert.equal(b.body.held, 'woken');
  c.clock.advance(30_000);
  assert.equal((await wOther.answer).body.held, 'timeout');
});

test('a node whose set differs from the one it has seen is answered at once, `changed`', async () => {
  const [n] = nodes as [FakeNode];
  const digest = await seen(n);
  await startRun(c.store, 'web', '1.1.0', { canary: [n.nodeId], batch: '1', bakeMs: 0 });
  const a = await heartbeat(n, `30; seen=${digest}`).answer;
  assert.equal(a.body.held, 'changed');
  assert.equal(a.body.desired.length, 1);
  assert.notEqual(a.body.desiredDigest, digest);
});

test('no header, or a malformed one: answered at once without the hold fields (an older agent reads a strict answer)', async () => {
  const [n] = nodes as [FakeNode];
  for (const hold of [undefined, '0', 'forever', `30; seen=${'z'.repeat(32)}`]) {
    const a = await heartbeat(n, hold).answer;
    assert.equal(a.status, 200, String(hold));
    assert.equal('held' in a.body, false, String(hold));
    assert.equal('desiredDigest' in a.body, false, String(hold));
  }
});

test('a refused heartbeat is never held: the refusal goes at once', async () => {
  const [n] = nodes as [FakeNode];
  const digest = await seen(n);
  const body = n.body({ seq: 1 });
  const a = await sendHeartbeat(c.server.url, body, `30; seen=${digest}`).answer;
  assert.equal(a.status, 409);
  assert.equal(a.body.error.code, 'SEQ_REPLAYED');
});

test('a client that goes away gives its hold back; closing the server answers its holds `closing`', async () => {
  const [n, m] = nodes as [FakeNode, FakeNode];
  const w = await held(heartbeat(n, `30; seen=${await seen(n)}`));
  w.abort();
  await pause(100);
  const x = await held(heartbeat(n, `30; seen=${await seen(n)}`));
  const y = await held(heartbeat(m, `30; seen=${await seen(m)}`));
  await c.server.close();
  for (const p of [x, y]) {
    const a = await p.answer;
    assert.equal(a.status, 200);
    assert.equal(a.body.held, 'closing');
  }
});

test('an instance that holds its most answers a hold at once, `busy`: the agent sleeps its interval', async () => {
  await c.close();
  c = await startControlInProcess({ heartbeatSeconds: 30, waits: { maxWaits: 1 } });
  nodes = await enrollNodes(c, 2);
  const [n, m] = nodes as [FakeNode, FakeNode];
  const w = await held(heartbeat(n, `30; seen=${await seen(n)}`));
  const a = await heartbeat(m, `30; seen=${await seen(m)}`).answer;
  assert.equal(a.status, 200);
  assert.equal(a.body.held, 'busy');
  c.clock.advance(30_000);
  assert.equal((await w.answer).body.held, 'timeout');
});
