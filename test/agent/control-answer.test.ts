import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { assertSameAsSchema, envelopeEdge, junk, lengths, goldenInputs, recordGolden, throughJson, validEnvelope, withKey } from '../helpers/check-arbitraries.js';
import { readErrorAnswer, readHeartbeatAnswer } from '../../src/agent/control-answer.js';
import { errorAnswerSchema, heartbeatAnswerSchema } from '../../src/core/control-api.js';

// The agent reads heartbeat answers without zod (control-answer.ts); these hold its reading to
// the zod schemas of the contract, both ways: the same bodies accepted, the same values returned.

// Every body is a valid answer with at most one field changed to a value near the edge of its
// rule (just inside or just outside it) or to junk, so each rule decides the verdict on its own
// often enough, deep in the answer too; plus arbitrary JSON.
const intEdge = fc.oneof(fc.integer({ min: -3, max: 5 }), fc.constantFrom(86_399, 86_400, 86_401, 2 ** 53 - 1, 2 ** 53, 1e20, 0.5, -0, -1), fc.integer(), junk);
const validEntry = fc.record({
  app: fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,62}$/),
  version: fc.oneof(fc.constantFrom('1.0.0', '2.3.4-rc.1'), fc.stringMatching(/^(0|[1-9]\d{0,2})\.\d\.\d(-[0-9A-Za-z.-]{1,4})?$/)),
  attemptId: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,5}$/),
  manifest: validEnvelope,
});
const validHeartbeat = fc.record({
  ackedSeqs: fc.array(fc.integer({ min: 1, max: 1e6 }), { maxLength: 3 }),
  desired: fc.array(validEntry, { maxLength: 2 }),
  heartbeatSeconds: fc.integer({ min: 1, max: 86_400 }),
});
const entryEdge = fc.oneof(
  withKey(validEntry, 'app', fc.oneof(fc.constantFrom('Web', '-x', 'a'.repeat(63), 'a'.repeat(64), 'a_b', 'a.b', ''), junk)),
  withKey(
    validEntry,
    'version',
    fc.oneof(fc.constantFrom('01.2.3', '1.2', '1.2.3+b', '1.2.3-', `1.2.3-${'x'.repeat(122)}`, `1.2.3-${'x'.repeat(123)}`, ' 1.2.3'), junk),
  ),
  withKey(validEntry, 'attemptId', fc.oneof(fc.constantFrom('a'.repeat(128), 'a'.repeat(129), '.a', 'a b', 'a:b.c-d_e', ''), junk)),
  withKey(validEntry, 'manifest', envelopeEdge),
  withKey(validEntry, 'extra', junk),
  junk,
);
const heartbeat = fc.oneof(
  validHeartbeat,
  withKey(validHeartbeat, 'heartbeatSeconds', intEdge),
  fc.tuple(validHeartbeat, intEdge).map(([h, x]) => ({ ...h, ackedSeqs: [...h.ackedSeqs, x] })),
  withKey(validHeartbeat, 'ackedSeqs', fc.oneof(fc.constantFrom(4096, 4097).map((n) => Array.from({ length: n }, (_, i) => i + 1)), junk)),
  fc.tuple(validHeartbeat, entryEdge).map(([h, e]) => ({ ...h, desired: [...h.desired, e] })),
  withKey(validHeartbeat, 'desired', fc.oneof(fc.tuple(validEntry, fc.constantFrom(256, 257)).map(([e, n]) => Array.from({ length: n }, () => e)), junk)),
  withKey(validHeartbeat, 'extra', junk),
  fc.tuple(validHeartbeat, fc.constantFrom('ackedSeqs', 'desired', 'heartbeatSeconds')).map(([h, k]) => ({ ...h, [k]: undefined })),
);
const validError = fc.record(
  { error: fc.record({ code: fc.string({ maxLength: 10 }), message: fc.string({ maxLength: 10 }) }), lastSeq: fc.nat(), serverTime: fc.nat() },
  { requiredKeys: ['error'] },
);
const errorEdge = fc.oneof(
  validError,
  fc.tuple(validError, fc.oneof(lengths('c', 64, 65), junk)).map(([e, x]) => ({ ...e, error: { ...e.error, code: x } })),
  fc.tuple(validError, fc.oneof(lengths('m', 4096, 4097), junk)).map(([e, x]) => ({ ...e, error: { ...e.error, message: x } })),
  fc.tuple(validError, fc.constantFrom('code', 'message')).map(([e, k]) => ({ ...e, error: { ...e.error, [k]: undefined } })),
  fc.tuple(validError, junk).map(([e, x]) => ({ ...e, error: { ...e.error, extra: x } })),
  withKey(validError, 'error', junk),
  withKey(validError, 'lastSeq', intEdge),
  withKey(validError, 'serverTime', intEdge),
  withKey(validError, 'extra', junk),
);
const body = fc.oneof(heartbeat, errorEdge, fc.jsonValue()).map(throughJson);

const readHeartbeatValue = (v: unknown) => {
  const r = readHeartbeatAnswer(v);
  return r.ok ? r.value : null;
};

test('readHeartbeatAnswer accepts what heartbeatAnswerSchema accepts and returns what it returns', () => {
  let accepted = 0;
  const inputs = fc.oneof({ arbitrary: heartbeat.map(throughJson), weight: 4 }, body);
  recordGolden({ shape: 'heartbeat-answer', from: 'readHeartbeatAnswer of src/agent/control-answer.ts' }, readHeartbeatValue, goldenInputs(inputs, 2000, readHeartbeatValue, heartbeatAnswerSchema));
  fc.assert(
    fc.property(inputs, (v) => {
      const z = heartbeatAnswerSchema.safeParse(v);
      const mine = readHeartbeatAnswer(v);
      assert.equal(mine.ok, z.success, JSON.stringify(v).slice(0, 2000));
      if (mine.ok && z.success) {
        accepted++;
        assert.deepEqual(mine.value, z.data);
      }
    }),
    { numRuns: 2000 },
  );
  // Both verdicts were reached, or the property proves nothing.
  assert.ok(accepted > 50, `only ${accepted} answers accepted`);
});

test('readErrorAnswer accepts what errorAnswerSchema accepts and returns what it returns', () => {
  assertSameAsSchema(readErrorAnswer, errorAnswerSchema, fc.oneof({ arbitrary: errorEdge.map(throughJson), weight: 4 }, body), { numRuns: 2500, minAccepted: 51, golden: { shape: 'error-answer', from: 'readErrorAnswer of src/agent/control-answer.ts' } });
});

test('keys that name Object.prototype members or __proto__ are unknown keys, and refused', () => {
  const ok = { ackedSeqs: [1], desired: [], heartbeatSeconds: 30 };
  assert.equal(readHeartbeatAnswer(ok).ok, true);
  for (const key of ['__proto__', 'constructor', 'toString']) {
    const v = JSON.parse(`{"ackedSeqs":[1],"desired":[],"heartbeatSeconds":30,"${key}":{}}`);
    assert.equal(readHeartbeatAnswer(v).ok, false, key);
    assert.equal(heartbeatAnswerSchema.safeParse(v).success, false, key);
    recordGolden({ shape: 'heartbeat-answer', from: 'readHeartbeatAnswer of src/agent/control-answer.ts' }, readHeartbeatValue, [v]);
  }
  const entry = { app: 'web', version: '1.0.0', attemptId: 'a1', manifest: { payload: 'p', sig: 's', keyId: '0123456789abcdef' } };
  assert.equal(readHeartbeatAnswer({ ...ok, desired: [entry] }).ok, true);
  const withProto = JSON.parse(JSON.stringify({ ...ok, desired: [entry] }).replace('"sig":"s"', '"sig":"s","__proto__":{}'));
  assert.equal(readHeartbeatAnswer(withProto).ok, false);
  assert.equal(heartbeatAnswerSchema.safeParse(withProto).success, false);
  recordGolden({ shape: 'heartbeat-answer', from: 'readHeartbeatAnswer of src/agent/control-answer.ts' }, readHeartbeatValue, [ok, { ...ok, desired: [entry] }, withProto]);
});

test('a refused answer names where it went wrong', () => {
  const bad = { ackedSeqs: [1, 0], desired: [], heartbeatSeconds: 30 };
  // With heartbeatSeconds and a seq at their bounds, one past each and a fraction (for the golden file).
  const edges = [...[0, 1, 30.5, 86_400, 86_401].map((heartbeatSeconds) => ({ ...bad, ackedSeqs: [1], heartbeatSeconds })), ...[0, 1, 1.5, 2 ** 53 - 1, 2 ** 53].map((seq) => ({ ...bad, ackedSeqs: [seq] }))];
  recordGolden({ shape: 'heartbeat-answer', from: 'readHeartbeatAnswer of src/agent/control-answer.ts' }, readHeartbeatValue, [bad, ...edges]);
  const r = readHeartbeatAnswer(bad);
  assert.deepEqual(r, { ok: false, where: 'ackedSeqs.1', message: 'not a positive safe integer' });
});
