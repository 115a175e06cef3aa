import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import { HEARTBEAT_VERSIONS } from '../../src/core/heartbeat-schema.js';
import { DOMAINS, keyIdOf, signEnvelope, type Domain } from '../../src/platform/keys.js';
import {
  ackedSeqs,
  verifyHeartbeat,
  type HeartbeatVerdict,
  type KnownNode,
  type RunAttempt,
} from '../../src/control/heartbeat/verify-heartbeat.js';

const NOW = 1_700_000_000_000;
const MINUTE = 60_000;

function keys() {
  const node = generateKeyPairSync('ed25519');
  const helper = generateKeyPairSync('ed25519');
  return { node, helper };
}
const a = keys();
const b = keys();

// node-a's receipts seq 3 and 4 are stored (built below, once receipt() exists).
const storedA = new Map<number, Envelope>();
const nodes: Record<string, KnownNode> = {
  'node-a': { nodeId: 'node-a', nodeKey: a.node.publicKey, helperKey: () => a.helper.publicKey, lastSeq: 41, storedReceipt: (seq) => storedA.get(seq) ?? null },
  'node-b': { nodeId: 'node-b', nodeKey: b.node.publicKey, helperKey: () => b.helper.publicKey, lastSeq: 0, storedReceipt: () => null },
};
const lookupNode = (nodeId: string): KnownNode | null => nodes[nodeId] ?? null;

// What the control plane's runs issued: the current run's attempt to node-a for web, an earlier
// run's, and attempts issued to another node and for another app.
const attempts: RunAttempt[] = [
  { attemptId: 'run-2.node-a', nodeId: 'node-a', app: 'web', version: '1.1.0' },
  { attemptId: 'run-1.node-a', nodeId: 'node-a', app: 'web', version: '1.1.0' },
  { attemptId: 'run-2.node-b', nodeId: 'node-b', app: 'web', version: '1.1.0' },
  { attemptId: 'run-3.node-a', nodeId: 'node-a', app: 'api', version: '1.1.0' },
];
const issued = (attemptId: string): RunAttempt | null => attempts.find((x) => x.attemptId === attemptId) ?? null;

function receiptPayload(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    v: 1, nodeId: 'node-a', app: 'web', attemptId: 'run-2.node-a', seq: 5, fromVersion: '1.0.0', targetVersion: '1.1.0',
    integrity: null, outcome: 'active', startedAt: NOW - 5 * MINUTE, updatedAt: NOW - 4 * MINUTE, ...over,
  };
}

function receipt(over: Record<string, unknown> = {}, key: KeyObject = a.helper.privateKey, domain: Domain = DOMAINS.receipt): Envelope {
  return signEnvelope(domain, receiptPayload(over), key);
}

storedA.set(3, receipt({ seq: 3 }));
storedA.set(4, receipt({ seq: 4 }));

function heartbeatPayload(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    v: 1, nodeId: 'node-a', seq: 42, sentAt: NOW, bootId: 'boot-1', agentVersion: '0.1.0',
    apps: [{ name: 'web', current: '1.1.0', previous: '1.0.0', held: false, blocked: false, supervisor: { state: 'running', pid: 1234, attempts: 0, since: NOW - MINUTE } }],
    receipts: [],
    ...over,
  };
}

function body(over: Record<string, unknown> = {}, key: KeyObject = a.node.privateKey, domain: Domain = DOMAINS.heartbeat): Buffer {
  return Buffer.from(JSON.stringify(signEnvelope(domain, heartbeatPayload(over), key)));
}

// Signs bytes as they are, for payloads canonical JSON refuses to write (floats).
function rawBody(payloadText: string): Buffer {
  const p = Buffer.from(payloadText, 'utf8');
  const sig = sign(null, Buffer.concat([Buffer.from(DOMAINS.heartbeat + '\n'), p]), a.node.privateKey);
  return Buffer.from(JSON.stringify({ payload: p.toString('base64'), sig: sig.toString('base64'), keyId: keyIdOf(a.node.publicKey) }));
}

function verify(buf: Buffer, opts?: { maxBytes?: number; skewMs?: number }): HeartbeatVerdict {
  return verifyHeartbeat(buf, lookupNode, issued, NOW, opts);
}

const b64 = (v: unknown) => canonicalBytes(v).toString('base64');

const STATUSES = new Set([400, 401, 409, 422]);
const CODES = new Set(['BAD_BODY', 'UNKNOWN_NODE', 'BAD_SIGNATURE', 'SEQ_REPLAYED', 'CLOCK_SKEW', 'RECEIPT_REJECTED']);

// Each rejection of docs/design.md §6 and the list: the body, then the answer expected.
const rejections: Array<{ name: string; body: () => Buffer; status: number; code: string; lastSeq?: number; serverTime?: number }> = [
  { name: 'a replayed seq (equal to the last seen)', body: () => body({ seq: 41 }), status: 409, code: 'SEQ_REPLAYED', lastSeq: 41 },
  { name: 'a replayed seq (below the last seen)', body: () => body({ seq: 7 }), status: 409, code: 'SEQ_REPLAYED', lastSeq: 41 },
  { name: 'sentAt 10 minutes behind the server', body: () => body({ sentAt: NOW - 10 * MINUTE }), status: 422, code: 'CLOCK_SKEW', serverTime: NOW },
  { name: 'sentAt 10 minutes ahead of the server', body: () => body({ sentAt: NOW + 10 * MINUTE }), status: 422, code: 'CLOCK_SKEW', serverTime: NOW },
  { name: 'the node key signing under the receipt domain', body: () => body({}, a.node.privateKey, DOMAINS.receipt), status: 401, code: 'BAD_SIGNATURE' },
  { name: 'the node key signing under the enrollment domain', body: () => body({}, a.node.privateKey, DOMAINS.enroll), status: 401, code: 'BAD_SIGNATURE' },
  { name: "another node's key signing node-a's heartbeat", body: () => body({}, b.node.privateKey), status: 401, code: 'BAD_SIGNATURE' },
  {
    name: "another node's signature carrying node-a's keyId",
    body: () => Buffer.from(JSON.stringify({ ...signEnvelope(DOMAINS.heartbeat, heartbeatPayload(), b.node.privateKey), keyId: keyIdOf(a.node.publicKey) })),
    status: 401,
    code: 'BAD_SIGNATURE',
  },
  {
    name: "node-a's helper key signing node-a's heartbeat",
    body: () => body({}, a.helper.privateKey),
    status: 401,
    code: 'BAD_SIGNATURE',
  },
  {
    name: 'a heartbeat payload altered after signing',
    body: () => {
      const env = signEnvelope(DOMAINS.heartbeat, heartbeatPayload(), a.node.privateKey);
      return Buffer.from(JSON.stringify({ ...env, payload: b64(heartbeatPayload({ seq: 1000 })) }));
    },
    status: 401,
    code: 'BAD_SIGNATURE',
  },
  { name: 'a node that never enrolled', body: () => body({ nodeId: 'node-z' }), status: 401, code: 'UNKNOWN_NODE' },
  { name: 'a body over 1 MiB', body: () => Buffer.concat([body(), Buffer.alloc(1024 * 1024, 0x20)]), status: 400, code: 'BAD_BODY' },
  { name: 'invalid JSON', body: () => Buffer.from('{"payload": "eyJ'), status: 400, code: 'BAD_BODY' },
  { name: 'invalid UTF-8', body: () => Buffer.from([0x7b, 0xff, 0x7d]), status: 400, code: 'BAD_BODY' },
  { name: 'JSON that is not an envelope', body: () => Buffer.from(JSON.stringify(heartbeatPayload())), status: 400, code: 'BAD_BODY' },
  { name: 'an envelope with an extra field', body: () => Buffer.from(JSON.stringify({ ...JSON.parse(body().toString()), extra: 1 })), status: 400, code: 'BAD_BODY' },
  {
    name: 'a payload without a nodeId',
    body: () => Buffer.from(JSON.stringify(signEnvelope(DOMAINS.heartbeat, { v: 1, seq: 42 }, a.node.privateKey))),
    status: 400,
    code: 'BAD_BODY',
  },
  { name: 'a signed heartbeat with an unknown field', body: () => body({ extra: true }), status: 400, code: 'BAD_BODY' },
  { name: 'a signed heartbeat with a float seq', body: () => rawBody(JSON.stringify(heartbeatPayload({ seq: 42.5 }))), status: 400, code: 'BAD_BODY' },
  { name: 'a signed heartbeat reporting an app twice', body: () => body({ apps: [...(heartbeatPayload().apps as object[]), ...(heartbeatPayload().apps as object[])] }), status: 400, code: 'BAD_BODY' },
  {
    name: 'a signed heartbeat with 257 apps',
    body: () => body({ apps: Array.from({ length: 257 }, (_, i) => ({ ...(heartbeatPayload().apps as object[])[0], name: `app-${i}` })) }),
    status: 400,
    code: 'BAD_BODY',
  },
  { name: 'a signed heartbeat with 65 receipts', body: () => body({ receipts: Array.from({ length: 65 }, (_, i) => receipt({ seq: 100 + i })) }), status: 400, code: 'BAD_BODY' },
  {
    name: 'a receipt altered after signing',
    body: () => body({ receipts: [{ ...receipt(), payload: b64(receiptPayload({ outcome: 'rolled-back' })) }] }),
    status: 400,
    code: 'RECEIPT_REJECTED',
  },
  { name: "a receipt naming another node, signed by this node's helper key", body: () => body({ receipts: [receipt({ nodeId: 'node-b' })] }), status: 400, code: 'RECEIPT_REJECTED' },
  { name: "a receipt signed by another node's helper key", body: () => body({ receipts: [receipt({}, b.helper.privateKey)] }), status: 400, code: 'RECEIPT_REJECTED' },
  {
    name: "another node's genuine receipt relayed by this node",
    body: () => body({ receipts: [receipt({ nodeId: 'node-b', attemptId: 'run-2.node-b' }, b.helper.privateKey)] }),
    status: 400,
    code: 'RECEIPT_REJECTED',
  },
  { name: 'a receipt signed by the node key instead of the helper key', body: () => body({ receipts: [receipt({}, a.node.privateKey)] }), status: 400, code: 'RECEIPT_REJECTED' },
  { name: 'a receipt signed by the helper key under the heartbeat domain', body: () => body({ receipts: [receipt({}, a.helper.privateKey, DOMAINS.heartbeat)] }), status: 400, code: 'RECEIPT_REJECTED' },
  { name: 'a helper-signed payload that is not a receipt', body: () => body({ receipts: [receipt({ extra: 1 })] }), status: 400, code: 'RECEIPT_REJECTED' },
  {
    name: 'a forged receipt after a genuine one (the heartbeat is rejected whole)',
    body: () => body({ receipts: [receipt({ seq: 5 }), receipt({ seq: 6 }, a.node.privateKey)] }),
    status: 400,
    code: 'RECEIPT_REJECTED',
  },
  { name: 'a receipt carrying an attemptId a run issued to another node', body: () => body({ receipts: [receipt({ attemptId: 'run-2.node-b', seq: 7 })] }), status: 400, code: 'RECEIPT_REJECTED' },
  { name: 'a receipt carrying an attemptId a run issued for another app', body: () => body({ receipts: [receipt({ attemptId: 'run-3.node-a', seq: 7 })] }), status: 400, code: 'RECEIPT_REJECTED' },
  { name: "a receipt whose targetVersion is not its run's version", body: () => body({ receipts: [receipt({ targetVersion: '9.9.9', seq: 7 })] }), status: 400, code: 'RECEIPT_REJECTED' },
  {
    name: 'a before-enrollment receipt carrying an attemptId a run issued to another node',
    body: () => body({ receipts: [receipt({ nodeId: null, attemptId: 'run-2.node-b', seq: 7 })] }),
    status: 400,
    code: 'RECEIPT_REJECTED',
  },
  { name: 'a genuine receipt with another envelope under a seq already stored', body: () => body({ receipts: [receipt({ seq: 3, outcome: 'failed' })] }), status: 400, code: 'RECEIPT_REJECTED' },
  {
    name: 'two genuine receipts under one seq in one heartbeat',
    body: () => body({ receipts: [receipt({ seq: 8 }), receipt({ seq: 8, attemptId: 'cli-1' })] }),
    status: 400,
    code: 'RECEIPT_REJECTED',
  },
  {
    name: 'a forged receipt reusing a seq already stored',
    body: () => body({ receipts: [receipt({ seq: 3 }, b.helper.privateKey)] }),
    status: 400,
    code: 'RECEIPT_REJECTED',
  },
];

for (const r of rejections) {
  test(`the control plane rejects ${r.name} with ${r.status} ${r.code}`, () => {
    const v = verify(r.body());
    assert.equal(v.ok, false, 'rejected');
    if (v.ok) return;
    assert.ok(STATUSES.has(v.status), `a status: ${v.status}`);
    assert.ok(CODES.has(v.code), `a code: ${v.code}`);
    assert.ok(v.message.length > 0, 'a message');
    assert.deepEqual([v.status, v.code], [r.status, r.code], v.message);
    assert.equal(v.lastSeq, r.lastSeq, 'lastSeq only on SEQ_REPLAYED');
    assert.equal(v.serverTime, r.serverTime, 'serverTime only on CLOCK_SKEW');
    assert.deepEqual(ackedSeqs(v), [], 'a rejection acknowledges nothing');
  });
}

test('a good heartbeat with one counting and one non-counting receipt is accepted and both are acked', () => {
  const current = receipt({ seq: 5, attemptId: 'run-2.node-a' });
  const manual = receipt({ seq: 6, attemptId: 'manual-20240101', outcome: 'rolled-back', reason: { code: 'REPLACEMENT_UNHEALTHY', message: 'probe failed' } });
  const v = verify(body({ receipts: [current, manual] }));
  assert.ok(v.ok, v.ok ? '' : v.message);
  assert.equal(v.heartbeat.seq, 42);
  assert.equal(v.heartbeat.apps[0]?.supervisor.pid, 1234);
  assert.deepEqual(v.receipts.map((r) => [r.payload.seq, r.payload.attemptId, r.counts]), [[5, 'run-2.node-a', true], [6, 'manual-20240101', false]]);
  assert.deepEqual(v.receipts.map((r) => r.envelope), [current, manual], 'the envelopes are kept as relayed, to store');
  assert.deepEqual(v.duplicateSeqs, []);
  assert.deepEqual(ackedSeqs(v), [5, 6]);
});

test('a heartbeat with no receipts and no apps is accepted and acks nothing', () => {
  const v = verify(body({ apps: [], receipts: [] }));
  assert.ok(v.ok);
  assert.deepEqual(ackedSeqs(v), []);
});

test('sentAt exactly 5 minutes off is within the window; the window is a setting', () => {
  assert.ok(verify(body({ sentAt: NOW - 5 * MINUTE })).ok);
  assert.ok(verify(body({ sentAt: NOW + 5 * MINUTE })).ok);
  const v = verify(body({ sentAt: NOW - 2 * MINUTE }), { skewMs: MINUTE });
  assert.deepEqual(v.ok ? null : [v.status, v.code, v.serverTime], [422, 'CLOCK_SKEW', NOW]);
});

test('the body limit is a setting: a body one byte over it is refused, one at it is not', () => {
  const buf = body();
  assert.ok(verify(buf, { maxBytes: buf.length }).ok);
  const v = verify(buf, { maxBytes: buf.length - 1 });
  assert.deepEqual(v.ok ? null : [v.status, v.code], [400, 'BAD_BODY']);
});

// Receipts that verify but answer no attempt a run issued to this node for this app: stored and
// acked so the agent's outbox drains, never a rollout verdict.
const nonCounting: Array<{ name: string; over: Record<string, unknown> }> = [
  { name: "an operator's manual update", over: { attemptId: 'cli-7f3a', seq: 7 } },
  { name: 'a receipt made before enrollment (nodeId null)', over: { nodeId: null, attemptId: 'run-2.node-a', seq: 7 } },
];

for (const r of nonCounting) {
  test(`a receipt of ${r.name} is accepted, stored and acked but does not count`, () => {
    const v = verify(body({ receipts: [receipt(r.over)] }));
    assert.ok(v.ok, v.ok ? '' : v.message);
    assert.deepEqual(v.receipts.map((x) => [x.payload.seq, x.counts]), [[7, false]]);
    assert.deepEqual(ackedSeqs(v), [7]);
  });
}

test("a late receipt of an earlier run is accepted and stored; it counts only while the lookup knows that run's attempt", () => {
  const late = receipt({ attemptId: 'run-1.node-a', seq: 7, outcome: 'rolled-back', reason: { code: 'REPLACEMENT_UNHEALTHY', message: 'probe failed' } });
  // The store remembers every run's attempts: the receipt is tied to run-1, and the planner of
  // run-2 ignores it as not its own (docs/design.md §9) but may read it as a revert of earlier runs.
  const v = verify(body({ receipts: [late] }));
  assert.ok(v.ok, v.ok ? '' : v.message);
  assert.deepEqual(v.receipts.map((x) => [x.payload.seq, x.counts]), [[7, true]]);
  // A lookup that knows only the open run's attempts: still accepted, stored and acked.
  const onlyRun2 = (id: string) => (id === 'run-2.node-a' ? issued(id) : null);
  const w = verifyHeartbeat(body({ receipts: [late] }), lookupNode, onlyRun2, NOW);
  assert.ok(w.ok, w.ok ? '' : w.message);
  assert.deepEqual([w.receipts.map((x) => x.counts), ackedSeqs(w)], [[false], [7]]);
});

test('a receipt whose seq is already stored is acked again and not stored twice', () => {
  const v = verify(body({ receipts: [receipt({ seq: 3 }), receipt({ seq: 5 }), receipt({ seq: 4 })] }));
  assert.ok(v.ok, v.ok ? '' : v.message);
  assert.deepEqual(v.receipts.map((r) => r.payload.seq), [5], 'only the new one is to store');
  assert.deepEqual(v.duplicateSeqs, [3, 4]);
  assert.deepEqual(ackedSeqs(v), [3, 4, 5]);
});

test('a receipt repeated in one heartbeat is stored once and acked once', () => {
  const r = receipt({ seq: 5 });
  const v = verify(body({ receipts: [r, r] }));
  assert.ok(v.ok);
  assert.deepEqual(v.receipts.map((x) => x.payload.seq), [5]);
  assert.deepEqual(ackedSeqs(v), [5]);
});

test('a resent heartbeat after a lost answer needs a new seq; its receipts are then acked as duplicates', () => {
  const receipts = [receipt({ seq: 5 })];
  const first = verify(body({ seq: 42, receipts }));
  assert.ok(first.ok);
  const storedNow = new Map([...storedA, [5, receipts[0] as Envelope]]);
  const stored: KnownNode = { ...(nodes['node-a'] as KnownNode), lastSeq: 42, storedReceipt: (seq) => storedNow.get(seq) ?? null };
  const again = verifyHeartbeat(body({ seq: 42, receipts }), () => stored, issued, NOW);
  assert.deepEqual(again.ok ? null : [again.status, again.code, again.lastSeq], [409, 'SEQ_REPLAYED', 42]);
  const next = verifyHeartbeat(body({ seq: 43, receipts }), () => stored, issued, NOW);
  assert.ok(next.ok);
  assert.deepEqual([next.receipts.length, ackedSeqs(next)], [0, [5]]);
});

test('an unsigned replay learns nothing: the signature is checked before the seq and the clock', () => {
  const v = verify(body({ seq: 1, sentAt: NOW - 60 * MINUTE }, b.node.privateKey));
  assert.deepEqual(v.ok ? null : [v.status, v.code, v.lastSeq, v.serverTime], [401, 'BAD_SIGNATURE', undefined, undefined]);
});

test('a replayed seq is answered before the clock is checked', () => {
  const v = verify(body({ seq: 41, sentAt: NOW - 60 * MINUTE }));
  assert.deepEqual(v.ok ? null : [v.status, v.code], [409, 'SEQ_REPLAYED']);
});

test("node-b's own heartbeat and receipt verify with node-b's keys (the control for the cross-node cases)", () => {
  const r = receipt({ nodeId: 'node-b', attemptId: 'run-2.node-b', seq: 1 }, b.helper.privateKey);
  const v = verify(body({ nodeId: 'node-b', seq: 1, receipts: [r] }, b.node.privateKey));
  assert.ok(v.ok, v.ok ? '' : v.message);
  assert.deepEqual(v.receipts.map((x) => x.counts), [true]);
});

test('garbage of any shape is a rejection, never a throw', () => {
  for (const text of ['null', '[]', '1', '"x"', '{}', '{"payload":"!!","sig":"x","keyId":"0123456789abcdef"}', '{"payload":"bnVsbA==","sig":"x","keyId":"0123456789abcdef"}']) {
    const v = verify(Buffer.from(text));
    assert.equal(v.ok, false, text);
    if (!v.ok) assert.deepEqual([v.status, v.code], [400, 'BAD_BODY'], text);
  }
});

test('a refused receipt without a targetVersion agrees with the issue it answers and counts', () => {
  const v = verify(body({ receipts: [receipt({ seq: 7, outcome: 'refused', targetVersion: null, reason: { code: 'BUSY', message: 'busy' } })] }));
  assert.ok(v.ok, v.ok ? '' : v.message);
  assert.deepEqual(v.receipts.map((x) => [x.payload.seq, x.counts]), [[7, true]]);
});

test("a heartbeat v2 carries the app steward's FALLBACK (self) and is accepted; self in a v1 heartbeat is refused", () => {
  const steward = { name: 'steward', current: '2.0.0', previous: '1.0.0', held: false, blocked: false, supervisor: { state: 'stopped', attempts: 0, since: null }, self: { fallback: { version: '2.0.0', starts: 3 } } };
  const v = verify(body({ v: 2, apps: [steward] }));
  assert.ok(v.ok, v.ok ? '' : v.message);
  assert.deepEqual(v.heartbeat.apps[0]?.self, { fallback: { version: '2.0.0', starts: 3 } });
  const old = verify(body({ v: 1, apps: [steward] }));
  assert.equal(old.ok, false);
  assert.match(old.ok ? '' : old.message, /an app has `self` only in heartbeats v2/);
  assert.equal(verify(body({ v: Math.max(...HEARTBEAT_VERSIONS) + 1 })).ok, false, 'a version above the newest is refused');
});

test("a heartbeat v3 carries the app steward's package trial that reverted (self.packageReverted) and is accepted; in a v2 heartbeat it is refused", () => {
  const steward = { name: 'steward', current: '2.0.0', previous: '1.0.0', held: false, blocked: false, supervisor: { state: 'running', pid: 7, attempts: 0, since: 1 }, self: { fallback: null, packageReverted: { version: '3.0.0' } } };
  const v = verify(body({ v: 3, apps: [steward] }));
  assert.ok(v.ok, v.ok ? '' : v.message);
  assert.deepEqual(v.heartbeat.apps[0]?.self, { fallback: null, packageReverted: { version: '3.0.0' } });
  const v2 = verify(body({ v: 2, apps: [steward] }));
  assert.equal(v2.ok, false);
  assert.match(v2.ok ? '' : v2.message, /an app has `self.packageReverted` only in heartbeats v3/);
  assert.ok(verify(body({ v: 2, apps: [{ ...steward, self: { fallback: null } }] })).ok, 'v2 without it is as before');
});

test('a heartbeat v4 carries an app\'s open watch window and last exit (docs/design.md §17); a v3 heartbeat with them is refused', () => {
  const web = { name: 'web', current: '2.0.0', previous: '1.0.0', held: false, blocked: false, supervisor: { state: 'running', pid: 7, attempts: 1, since: 1 }, watch: { version: '2.0.0', until: 1_800_000_300_000, restarts: 1, maxRestarts: 2 }, lastExit: { code: 3, signal: null } };
  const v = verify(body({ v: 4, apps: [web] }));
  assert.ok(v.ok, v.ok ? '' : v.message);
  assert.deepEqual([v.heartbeat.apps[0]?.watch, v.heartbeat.apps[0]?.lastExit], [web.watch, web.lastExit]);
  const v3 = verify(body({ v: 3, apps: [web] }));
  assert.equal(v3.ok, false);
  assert.match(v3.ok ? '' : v3.message, /an app has `watch` and `lastExit` only in heartbeats v4/);
  const { watch: _w, lastExit: _e, ...plain } = web;
  assert.ok(verify(body({ v: 3, apps: [plain] })).ok, 'v3 without them is as before');
  assert.equal(verify(body({ v: 4, apps: [{ ...web, lastExit: { code: null, signal: 'kill;rm' } }] })).ok, false, 'a signal name is capitals and digits');
  assert.equal(verify(body({ v: 4, apps: [{ ...web, watch: { ...web.watch, restarts: -1 } }] })).ok, false);
});

test("a heartbeat v5 carries the reason of an app's last exit (docs/design.md §17); a v4 heartbeat with it is refused", () => {
  const web = { name: 'web', current: '2.0.0', previous: '1.0.0', held: false, blocked: false, supervisor: { state: 'running', pid: 7, attempts: 1, since: 1 }, lastExit: { code: null, signal: 'SIGKILL', reason: 'OOM' } };
  const v = verify(body({ v: 5, apps: [web] }));
  assert.ok(v.ok, v.ok ? '' : v.message);
  assert.deepEqual(v.heartbeat.apps[0]?.lastExit, web.lastExit);
  const v4 = verify(body({ v: 4, apps: [web] }));
  assert.equal(v4.ok, false);
  assert.match(v4.ok ? '' : v4.message, /`lastExit` has `reason` only in heartbeats v5/);
  assert.equal(verify(body({ v: 5, apps: [{ ...web, lastExit: { ...web.lastExit, reason: 'SEGV' } }] })).ok, false, 'only the reasons steward names');
  const { lastExit: _e, ...plain } = web;
  assert.ok(verify(body({ v: 5, apps: [{ ...plain, restarts: 4 }] })).ok);
  assert.equal(verify(body({ v: 4, apps: [{ ...plain, restarts: 4 }] })).ok, false, 'restarts only in v5');
  assert.equal(verify(body({ v: 5, apps: [{ ...plain, restarts: -1 }] })).ok, false);
});
