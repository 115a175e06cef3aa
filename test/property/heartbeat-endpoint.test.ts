// Property tests of the control plane's heartbeat endpoint (docs/design.md §6, issue 7 item 5): mutated
// signed envelopes, payloads re-signed after a mutation and relayed receipts altered after
// signing. verifyHeartbeat never throws and never accepts signed bytes it did not get signed;
// over HTTP a rejection has its closed code, leaves every table as it was, and nothing is a 500.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { errorAnswerSchema, HEARTBEAT_PATH } from '../../src/core/control-api.js';
import { heartbeatPayloadSchema } from '../../src/core/heartbeat-schema.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import { DOMAINS, openEnvelope, keyIdOf, signEnvelope } from '../../src/platform/keys.js';
import { verifyHeartbeat, type HeartbeatRejectCode, type KnownNode, type RunAttempt } from '../../src/control/heartbeat/verify-heartbeat.js';
import { startRun } from '../../src/control/rollouts/start-run.js';
import { dumpStore, FakeNode, post, startControlInProcess, T0, type Control } from '../helpers/control-harness.js';
import { base64TextEdit, mutatedBytes, mutatedJson, nearValidJsonBytes } from './mutate.js';
import { signAny } from './sign-any.js';
import { checkProperty, guarded, runsMade } from './property-run.js';

const CODES: readonly HeartbeatRejectCode[] = ['BAD_BODY', 'UNKNOWN_NODE', 'BAD_SIGNATURE', 'SEQ_REPLAYED', 'CLOCK_SKEW', 'RECEIPT_REJECTED'];
const STATUS_OF: Record<HeartbeatRejectCode, number> = { BAD_BODY: 400, RECEIPT_REJECTED: 400, UNKNOWN_NODE: 401, BAD_SIGNATURE: 401, SEQ_REPLAYED: 409, CLOCK_SKEW: 422 };

// --- The pure verifier --------------------------------------------------------------------

const nodeKey = generateKeyPairSync('ed25519');
const helperKey = generateKeyPairSync('ed25519');
const NOW = T0;
const LAST_SEQ = 10;

function receiptPayload(seq: number, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { v: 1, nodeId: 'n-1', app: 'web', attemptId: `run-1-${seq}`, seq, fromVersion: '1.0.0', targetVersion: '1.1.0', integrity: null, outcome: 'active', startedAt: NOW - 1000, updatedAt: NOW, ...over };
}
const stored = signEnvelope(DOMAINS.receipt, receiptPayload(1), helperKey.privateKey);
const node: KnownNode = {
  nodeId: 'n-1',
  nodeKey: nodeKey.publicKey,
  helperKey: () => helperKey.publicKey,
  lastSeq: LAST_SEQ,
  storedReceipt: (seq) => (seq === 1 ? stored : null),
};
const attempts: RunAttempt[] = [2, 3].map((s) => ({ attemptId: `run-1-${s}`, nodeId: 'n-1', app: 'web', version: '1.1.0' }));
const lookupNode = (id: string) => (id === 'n-1' ? node : null);
const issued = (id: string) => attempts.find((a) => a.attemptId === id) ?? null;

const goodPayload = {
  v: 1, nodeId: 'n-1', seq: LAST_SEQ + 1, sentAt: NOW, bootId: 'boot-1', agentVersion: '0.1.0',
  apps: [{ name: 'web', current: '1.1.0', previous: '1.0.0', held: false, blocked: false, supervisor: { state: 'running', pid: 42, attempts: 0, since: NOW - 5000 } }],
  receipts: [stored, signEnvelope(DOMAINS.receipt, receiptPayload(2), helperKey.privateKey), signEnvelope(DOMAINS.receipt, receiptPayload(3, { outcome: 'refused', targetVersion: null }), helperKey.privateKey)],
};
const good = signEnvelope(DOMAINS.heartbeat, goodPayload, nodeKey.privateKey);
const goodBody = Buffer.from(JSON.stringify(good));

test('the control case: the unmutated heartbeat verifies', () => {
  const v = verifyHeartbeat(goodBody, lookupNode, issued, NOW);
  assert.ok(v.ok, JSON.stringify(v));
  assert.deepEqual(v.duplicateSeqs, [1]);
});

// Verdicts by code, printed after each property so a reader sees what the inputs reached.
const tally = new Map<string, number>();
function printTally(): void {
  process.stdout.write(`# verdicts: ${JSON.stringify(Object.fromEntries([...tally].sort()))}\n`);
  tally.clear();
}

// Checks a verdict's shape; returns it.
function checkVerdict(v: ReturnType<typeof verifyHeartbeat>): ReturnType<typeof verifyHeartbeat> {
  const key = v.ok ? 'ok' : v.code;
  tally.set(key, (tally.get(key) ?? 0) + 1);
  if (!v.ok) {
    assert.ok(CODES.includes(v.code), `unknown code ${v.code}`);
    assert.equal(v.status, STATUS_OF[v.code], `${v.code} with status ${v.status}`);
    assert.ok(v.message.length > 0);
  }
  return v;
}

test('a mutated heartbeat body verifies only when its signed payload, signature and key id are untouched', async () => {
  const bodies = fc.oneof(
    nearValidJsonBytes(good),
    mutatedBytes(goodBody, 3),
    base64TextEdit(good.payload).map((payload) => Buffer.from(JSON.stringify({ ...good, payload }))),
    base64TextEdit(good.sig).map((sig) => Buffer.from(JSON.stringify({ ...good, sig }))),
    fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
  );
  await checkProperty(
    'verifyHeartbeat: no unsigned change verifies',
    fc.property(bodies, (body) => {
      const v = checkVerdict(verifyHeartbeat(body, lookupNode, issued, NOW));
      if (v.ok) {
        const env = JSON.parse(body.toString('utf8')) as Envelope;
        assert.deepEqual([env.payload, env.sig, env.keyId], [good.payload, good.sig, good.keyId], 'accepted a changed envelope');
      }
    }),
    1500,
  );
  printTally();
});

test('a heartbeat re-signed after a mutation is accepted only if its payload holds, and altered receipts are never stored', async () => {
  // The payload mutated and signed again by the node key; some receipts too, by the helper key
  // (still valid) or not (altered after signing).
  const receiptEdits = fc.array(fc.record({ i: fc.nat(2), resign: fc.boolean(), edit: mutatedJson(receiptPayload(2), 2) }), { maxLength: 2 });
  // Also well-formed payloads at the edges of the seq and clock checks, and for another node.
  const SKEW = 5 * 60 * 1000;
  const edges = fc
    .record({
      seq: fc.constantFrom(LAST_SEQ - 1, LAST_SEQ, LAST_SEQ + 1, Number.MAX_SAFE_INTEGER),
      sentAt: fc.constantFrom(NOW, NOW - SKEW, NOW + SKEW, NOW - SKEW - 1, NOW + SKEW + 1),
      nodeId: fc.constantFrom('n-1', 'n-1', 'n-2'),
    })
    .map((o) => ({ ...goodPayload, ...o }));
  const arb = fc.tuple(fc.oneof({ weight: 3, arbitrary: mutatedJson(goodPayload, 2) }, { weight: 1, arbitrary: edges }), receiptEdits, fc.boolean());
  await checkProperty(
    'verifyHeartbeat: re-signed mutations',
    fc.property(arb, ([payload, edits, editPayload]) => {
      let p = (editPayload ? payload : structuredClone(goodPayload)) as Record<string, unknown>;
      if (p && typeof p === 'object' && Array.isArray(p.receipts)) {
        const receipts = [...(p.receipts as unknown[])];
        for (const e of edits) {
          if (e.i >= receipts.length) continue;
          receipts[e.i] = e.resign
            ? signAny(DOMAINS.receipt, e.edit, helperKey.privateKey)
            : { ...(receipts[e.i] as Envelope), payload: Buffer.from(JSON.stringify(e.edit) ?? 'null').toString('base64') };
        }
        p = { ...p, receipts };
      }
      const env = signAny(DOMAINS.heartbeat, p, nodeKey.privateKey);
      const v = checkVerdict(verifyHeartbeat(Buffer.from(JSON.stringify(env)), lookupNode, issued, NOW));
      if (!v.ok) return;
      const parsed = heartbeatPayloadSchema.safeParse(p);
      assert.ok(parsed.success, 'accepted a payload its schema refuses');
      assert.ok(parsed.data.seq > LAST_SEQ, `accepted seq ${parsed.data.seq}, not above lastSeq ${LAST_SEQ}`);
      assert.ok(Math.abs(parsed.data.sentAt - NOW) <= SKEW, `accepted sentAt ${parsed.data.sentAt - NOW} ms off`);
      assert.equal(parsed.data.nodeId, 'n-1');
      const helperKeys = new Map([[keyIdOf(helperKey.publicKey), helperKey.publicKey]]);
      for (const r of v.receipts) {
        assert.ok(openEnvelope(r.envelope, DOMAINS.receipt, helperKeys).ok, 'a receipt to store does not verify');
        assert.notEqual(r.payload.seq, 1, 'a receipt under the stored seq 1 would be stored again');
      }
    }),
    1000,
  );
  printTally();
});

// --- Over HTTP, against a real store ---------------------------------------------------------

let c: Control;
let n: FakeNode;
// A fresh connection per request: a kept-alive one may be reused just as the server's 5 s idle
// timeout closes it (the pure properties above run longer than that), an ECONNRESET of the test's.
http.globalAgent = new http.Agent({ keepAlive: false });
before(async () => {
  c = await startControlInProcess();
  n = await new FakeNode(c, 'host-p').enroll();
  n.setCurrent('web', '1.0.0');
  assert.equal((await n.heartbeat({ receipts: [n.receipt({ seq: 1, attemptId: 'cli-1' })] })).status, 200);
  await c.addRelease('web', '1.1.0');
  await startRun(c.store, 'web', '1.1.0', { canary: [n.nodeId] });
});
after(async () => {
  await c.close();
  process.stdout.write(`# ${runsMade.count} runs in this file\n`);
});

test('over HTTP, a mutated or re-signed heartbeat is never a 500, and a rejection changes no table', async () => {
  const bodyArb = fc.oneof(
    // Fresh seqs each time: the unmutated body would be accepted.
    fc.constant(null).map(() => n.body()).chain((b) => fc.oneof(nearValidJsonBytes(JSON.parse(b) as Envelope), mutatedBytes(Buffer.from(b), 3))),
    mutatedJson(n.payload({ receipts: [n.receipt({ seq: 2 })] }), 2).map((p) => Buffer.from(JSON.stringify(signAny(DOMAINS.heartbeat, p, n.node.privateKey)))),
  );
  let baseline = dumpStore(c.store);
  const seen = new Map<string, number>();
  await checkProperty(
    'control server: heartbeat rejections change nothing',
    fc.asyncProperty(bodyArb, guarded(async (body) => {
      const answer = await post(c.server.url, HEARTBEAT_PATH, body);
      const now = dumpStore(c.store);
      const label = answer.status === 200 ? '200' : `${answer.status} ${answer.body?.error?.code}`;
      seen.set(label, (seen.get(label) ?? 0) + 1);
      assert.notEqual(answer.status, 500, JSON.stringify(answer.body));
      if (answer.status !== 200) {
        assert.ok(errorAnswerSchema.safeParse(answer.body).success, JSON.stringify(answer.body));
        const code = answer.body.error.code as HeartbeatRejectCode;
        assert.ok(CODES.includes(code), `unknown code ${code}`);
        assert.equal(answer.status, STATUS_OF[code]);
        try {
          assert.deepEqual(now, baseline, `a ${answer.status} ${code} rejection changed the store`);
        } finally {
          // Also after a failure: each shrinking attempt is judged against the store it found.
          baseline = now;
        }
      }
      baseline = now;
    })),
    300,
  );
  process.stdout.write(`# answers: ${JSON.stringify(Object.fromEntries([...seen].sort()))}\n`);
  // Past the highest seq accepted: a re-signed mutation may have raised it (the node's own key signed it).
  const { lastSeq } = c.store.db.prepare('SELECT lastSeq FROM nodes WHERE nodeId = ?').get(n.nodeId) as { lastSeq: number };
  if (lastSeq < Number.MAX_SAFE_INTEGER) assert.equal((await n.heartbeat({ seq: lastSeq + 1 })).status, 200, 'the server no longer accepts a good heartbeat');
});
