// A heartbeat refused for clock skew is recorded on its node (issue 31, item 7), though such a
// heartbeat is not fresh by definition. What an attacker could try with that write:
// - forge one (another key, garbage, a node that is not enrolled) to mark a healthy node as
//   skewed: nothing is written unless the node key's signature holds;
// - replay an old signed heartbeat of the node, now far out of the clock window: its seq was
//   accepted already, so it is SEQ_REPLAYED and writes nothing;
// - have a node (or a replay of its never-accepted heartbeats) send refused heartbeats in a
//   tight loop to turn each into a store write: the refusal is written at most once a minute a
//   node, and holds three integers whatever the heartbeat carries.
// Real HTTP, a real SQLite store, a fake clock.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { HEARTBEAT_PATH } from '../../src/core/control-api.js';
import { SKEW_REFUSAL_GAP_MS } from '../../src/control/heartbeat/accept-heartbeat.js';
import { DOMAINS, signEnvelope } from '../../src/platform/keys.js';
import { dumpStore, FakeNode, MINUTE, post, startControlInProcess, type Control } from '../helpers/control-harness.js';

let c: Control;
let victim: FakeNode;
let other: FakeNode;

before(async () => {
  c = await startControlInProcess();
  victim = await new FakeNode(c, 'victim').enroll();
  other = await new FakeNode(c, 'other').enroll();
  for (const n of [victim, other]) assert.equal((await n.heartbeat()).status, 200);
});
after(() => c.close());

const refusalOf = (n: FakeNode) =>
  c.store.db.prepare('SELECT skewRefusedSince AS since, skewRefusedAt AS lastAt, skewRefusedMs AS skewMs FROM nodes WHERE nodeId = ?').get(n.nodeId) as { since: number | null; lastAt: number | null; skewMs: number | null };

test('a skewed heartbeat that is not signed by the node key, or is garbage, records nothing on the node it names', async () => {
  const before = dumpStore(c.store);
  const skewed = () => ({ sentAt: c.clock.now() - 10 * MINUTE });
  const stranger = generateKeyPairSync('ed25519');
  const forged = [
    victim.body(skewed(), stranger.privateKey),
    victim.body(skewed(), other.node.privateKey),
    victim.body(skewed(), victim.node.privateKey, DOMAINS.receipt),
    JSON.stringify({ ...JSON.parse(victim.body(skewed())), sig: 'A'.repeat(86) + '==' }),
    JSON.stringify(signEnvelope(DOMAINS.heartbeat, { nodeId: victim.nodeId, sentAt: 0, seq: 999 }, victim.node.privateKey)),
    `{"payload":"${Buffer.from(JSON.stringify({ nodeId: victim.nodeId, sentAt: 0 })).toString('base64')}","sig":"x","keyId":"k"}`,
  ];
  const codes = [];
  for (const body of forged) codes.push((await post(c.server.url, HEARTBEAT_PATH, body)).body.error.code);
  assert.deepEqual(codes, ['BAD_SIGNATURE', 'BAD_SIGNATURE', 'BAD_SIGNATURE', 'BAD_SIGNATURE', 'BAD_BODY', 'BAD_BODY']);
  assert.deepEqual(dumpStore(c.store), before);
  assert.deepEqual(refusalOf(victim), { since: null, lastAt: null, skewMs: null });
});

test('an old signed heartbeat of the node replayed long after, out of the clock window, is SEQ_REPLAYED and records nothing', async () => {
  const old = victim.body();
  assert.equal((await post(c.server.url, HEARTBEAT_PATH, old)).status, 200);
  c.clock.advance(30 * MINUTE);
  const before = dumpStore(c.store);
  const replay = await post(c.server.url, HEARTBEAT_PATH, old);
  assert.deepEqual([replay.status, replay.body.error.code], [409, 'SEQ_REPLAYED']);
  assert.deepEqual(dumpStore(c.store), before);
  assert.equal((await victim.heartbeat()).status, 200);
});

test('a flood of refused heartbeats from one node writes its refusal once a minute, three integers whatever they carry', async () => {
  const first = c.clock.now();
  const apps = Array.from({ length: 20 }, (_, i) => ({ name: `app-${i}`, current: `1.0.${i}` }));
  const flood = async (count: number) => {
    for (let i = 0; i < count; i++) {
      const a = await other.heartbeat({ sentAt: c.clock.now() + 10 * MINUTE + i, apps: apps.map((x) => ({ ...x, previous: null, held: false, blocked: false, supervisor: { state: 'running', attempts: 0, since: null } })) });
      assert.equal(a.status, 422);
      c.clock.advance(1000);
    }
  };
  const commits = () => (c.store.db.prepare('SELECT total_changes() AS n').get() as { n: number }).n;
  await flood(1);
  const written = refusalOf(other);
  assert.deepEqual(written, { since: first, lastAt: first, skewMs: 10 * MINUTE });
  const before = dumpStore(c.store);
  const changes = commits();
  // 58 more within the minute, a second apart: not one row written.
  await flood(SKEW_REFUSAL_GAP_MS / 1000 - 2);
  assert.deepEqual(dumpStore(c.store), before);
  assert.equal(commits(), changes);
  // The minute is over (the clock at first + 59 s, then on to first + 60 s): one update, the
  // first time kept.
  c.clock.advance(1000);
  await flood(10);
  assert.equal(commits(), changes + 1);
  const now = refusalOf(other);
  assert.equal(now.since, first);
  assert.equal(now.lastAt, first + SKEW_REFUSAL_GAP_MS);
  // What the node reported (its apps) was not taken from a refused heartbeat.
  assert.deepEqual(JSON.parse((c.store.db.prepare('SELECT apps FROM nodes WHERE nodeId = ?').get(other.nodeId) as { apps: string }).apps), []);
});
