// The wake-up wait (`GET /v1/wait`, docs/protocol.md) is held only for an enrolled node, by that
// node, a bounded number of times: a wait without a credential, with a malformed one, with a
// download credential, signed by another node's key, expired, or with a bad query is refused
// with its status and reason and holds nothing; a node may hold two at once on an instance (the
// third is 429 TOO_MANY_WAITS) and the instance its maximum (then 503 BUSY); a flood of
// anonymous waits holds nothing, so an enrolled node still waits.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { downloadAuthorization } from '../../src/platform/download-auth.js';
import { waitAuthorization } from '../../src/platform/wait-auth.js';
import { desiredChanged } from '../../src/control/rollouts/desired-changed.js';
import { enrollNodes, type Control, type FakeNode, startControlInProcess } from '../helpers/control-harness.js';
import { pause, sendWait, waitAuth, type PendingWait } from '../helpers/wait-client.js';

let c: Control;
let a: FakeNode;
let b: FakeNode;
let d: FakeNode;

before(async () => {
  c = await startControlInProcess({ heartbeatSeconds: 30 });
  [a, b, d] = (await enrollNodes(c, 3)) as [FakeNode, FakeNode, FakeNode];
});
after(() => c.close());

async function refused(w: PendingWait, status: number, code: string, message: RegExp): Promise<void> {
  const r = await w.answer;
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.equal(r.body.error.code, code);
  assert.match(r.body.error.message, message);
}

test('a wait without a credential, or with a malformed one, is 401 UNAUTHENTICATED and says what is missing', async () => {
  await refused(sendWait(c.server.url, undefined), 401, 'UNAUTHENTICATED', /takes the node's Steward-Node credential/);
  await refused(sendWait(c.server.url, 'Bearer so_abc'), 401, 'UNAUTHENTICATED', /not a well-formed Steward-Node credential/);
  await refused(sendWait(c.server.url, `Steward-Node ${a.nodeId} 12 !!!`), 401, 'UNAUTHENTICATED', /not a well-formed/);
  await refused(sendWait(c.server.url, waitAuthorization('n-0123456789abcdef', c.clock.now() + 60_000, a.node.privateKey)), 401, 'UNAUTHENTICATED', /not enrolled/);
});

test("a wait in another node's name, signed with this node's key, is refused: no node waits on another's changes", async () => {
  await refused(sendWait(c.server.url, waitAuthorization(b.nodeId, c.clock.now() + 60_000, a.node.privateKey)), 401, 'UNAUTHENTICATED', /signature is not the node key's/);
});

test("a node's download credential is not a wait credential, and an expired one is refused", async () => {
  await refused(sendWait(c.server.url, downloadAuthorization(a.nodeId, c.clock.now() + 60_000, a.node.privateKey)), 401, 'UNAUTHENTICATED', /signature is not the node key's/);
  await refused(sendWait(c.server.url, waitAuthorization(a.nodeId, c.clock.now() - 1, a.node.privateKey)), 401, 'UNAUTHENTICATED', /expired/);
  await refused(sendWait(c.server.url, waitAuthorization(a.nodeId, c.clock.now() + 24 * 3_600_000, a.node.privateKey)), 401, 'UNAUTHENTICATED', /too far ahead/);
});

test('a bad timeout is 400 BAD_QUERY, and a POST is 405', async () => {
  const auth = waitAuth(a.nodeId, a.node.privateKey, c.clock.now());
  for (const q of ['?timeout=0', '?timeout=61', '?timeout=abc', '?timeout=5&timeout=6', '?timeout=-1', '?timeout=1e1']) {
    await refused(sendWait(c.server.url, auth, q), 400, 'BAD_QUERY', /whole seconds from 1 to 60/);
  }
  const post = await sendWait(c.server.url, auth, '', 'POST').answer;
  assert.equal(post.status, 405);
  assert.equal(post.headers.allow, 'GET');
});

test('a node holds two waits at once on an instance; the third is 429 TOO_MANY_WAITS, and a wake answers both held', async () => {
  const auth = waitAuth(a.nodeId, a.node.privateKey, c.clock.now());
  const held = [sendWait(c.server.url, auth), sendWait(c.server.url, auth)];
  await pause(150);
  const third = sendWait(c.server.url, auth);
  await refused(third, 429, 'TOO_MANY_WAITS', /holds 2 waits/);
  assert.equal((await third.answer).headers['retry-after'], '60');
  assert.ok(held.every((w) => !w.answered()));
  await c.store.write((tx) => desiredChanged(tx, [a.nodeId]));
  for (const w of held) assert.deepEqual((await w.answer).body, { woken: true });
});

test('a client that goes away gives its slot back', async () => {
  const auth = waitAuth(b.nodeId, b.node.privateKey, c.clock.now());
  const gone = [sendWait(c.server.url, auth), sendWait(c.server.url, auth)];
  await pause(150);
  for (const w of gone) w.abort();
  await pause(150);
  const again = sendWait(c.server.url, auth);
  await pause(150);
  assert.equal(again.answered(), false, 'held: the two gone waits left no slot taken');
  await c.store.write((tx) => desiredChanged(tx, [b.nodeId]));
  assert.deepEqual((await again.answer).body, { woken: true });
});

test('a flood of anonymous waits holds nothing: each is answered 401 at once, and an enrolled node still waits', async () => {
  const flood = Array.from({ length: 200 }, () => sendWait(c.server.url, undefined));
  for (const w of flood) assert.equal((await w.answer).status, 401);
  const w = sendWait(c.server.url, waitAuth(d.nodeId, d.node.privateKey, c.clock.now()));
  await pause(150);
  assert.equal(w.answered(), false);
  await c.store.write((tx) => desiredChanged(tx, [d.nodeId]));
  assert.deepEqual((await w.answer).body, { woken: true });
});
