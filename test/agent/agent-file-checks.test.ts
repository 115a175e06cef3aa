import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { assertSameAsSchema, envelopeEdge, hex16, junk, lengths, recordGolden, throughJson, validEnvelope, withKey, type Golden } from '../helpers/check-arbitraries.js';
import type { z } from 'zod';
import { checkActedFile, checkEnrollmentFile, checkOutboxFile, checkSeqFile } from '../../src/agent/agent-file-checks.js';
import { enrollmentFileSchema } from '../../src/agent/enrollment-schema.js';
import { outboxFileSchema } from '../../src/core/outbox-schema.js';
import { actedFileSchema, seqFileSchema } from '../../src/agent/agent-file-schemas.js';

// The agent reads seq.json, acted.json, outbox.json and enrollment.json without zod (agent-file-checks.ts). These are the zod
// schemas they were read with before (and the rules they stand for); the checkers must give the
// same verdicts and values, both ways. Each file is a valid one with at most one field moved to
// the edge of its rule or to junk, so each rule decides a verdict on its own.

const intEdge = fc.oneof(fc.integer({ min: -3, max: 5 }), fc.constantFrom(2 ** 53 - 1, 2 ** 53, 1e20, 0.5, -0, -1), fc.integer(), junk);

const validSeq = fc.record({ schemaVersion: fc.constant(1), lastSeq: fc.nat() });
const seqFile = fc.oneof(
  validSeq,
  withKey(validSeq, 'schemaVersion', fc.oneof(fc.constantFrom(0, 2, '1', 1.5), junk)),
  withKey(validSeq, 'lastSeq', intEdge),
  withKey(validSeq, 'extra', junk),
  fc.tuple(validSeq, fc.constantFrom('schemaVersion', 'lastSeq')).map(([v, k]) => ({ ...v, [k]: undefined })),
  fc.jsonValue(),
);

const validEntry = fc.record({
  attemptId: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,5}$/),
  app: fc.string({ maxLength: 8 }),
  at: fc.nat(),
  answer: fc.string({ maxLength: 8 }),
});
const entryEdge = fc.oneof(
  withKey(validEntry, 'attemptId', fc.oneof(fc.constantFrom('a'.repeat(128), 'a'.repeat(129), '.a', 'a b', ''), junk)),
  withKey(validEntry, 'app', fc.oneof(fc.constantFrom('a'.repeat(64), 'a'.repeat(65)), junk)),
  withKey(validEntry, 'at', intEdge),
  withKey(validEntry, 'answer', fc.oneof(fc.constantFrom('a'.repeat(64), 'a'.repeat(65)), junk)),
  withKey(validEntry, 'extra', junk),
  junk,
);
const validActed = fc.record({ schemaVersion: fc.constant(1), acted: fc.array(validEntry, { maxLength: 3 }) });
const actedFile = fc.oneof(
  validActed,
  withKey(validActed, 'schemaVersion', fc.oneof(fc.constantFrom(0, 2, '1'), junk)),
  fc.tuple(validActed, entryEdge).map(([v, e]) => ({ ...v, acted: [...v.acted, e] })),
  withKey(validActed, 'acted', junk),
  withKey(validActed, 'extra', junk),
  fc.jsonValue(),
);

const validOutbox = fc.record({ schemaVersion: fc.constant(1), helperKeyId: fc.oneof(fc.constant(null), hex16), highestSeq: fc.nat(), pending: fc.array(validEnvelope, { maxLength: 3 }) });
const outboxFile = fc.oneof(
  validOutbox,
  withKey(validOutbox, 'schemaVersion', fc.oneof(fc.constantFrom(0, 2, '1'), junk)),
  withKey(validOutbox, 'helperKeyId', fc.oneof(fc.stringMatching(/^[0-9a-fA-F]{15,17}$/), junk)),
  withKey(validOutbox, 'highestSeq', intEdge),
  fc.tuple(validOutbox, envelopeEdge).map(([v, e]) => ({ ...v, pending: [...v.pending, e] })),
  withKey(validOutbox, 'pending', junk),
  withKey(validOutbox, 'extra', junk),
  fc.jsonValue(),
);

const validEnrollment = fc.record({
  schemaVersion: fc.constant(1),
  nodeId: fc.string({ minLength: 1, maxLength: 10 }),
  controlPlaneUrl: fc.oneof(fc.constantFrom('https://cp.example:8443', 'http://127.0.0.1:8080/base'), fc.webUrl()),
  enrolledAt: fc.nat(),
  heartbeatSeconds: fc.integer({ min: 1, max: 86_400 }),
  nodeKeyId: hex16,
});
const urlEdge = fc.oneof(
  fc.constantFrom(' https://cp.example ', 'https://cp.\texample/a\nb', '\u00a0https://cp.example\u2028', 'http:cp.example', 'cp.example', '', 'a:b', 'file:///x', 'https://[::1]:8443', 'https://cp.example:99999', 'https://exa mple'),
  fc.string({ maxLength: 12 }),
  junk,
);
const enrollmentFile = fc.oneof(
  validEnrollment,
  withKey(validEnrollment, 'schemaVersion', fc.oneof(fc.constantFrom(0, 2, '1'), junk)),
  withKey(validEnrollment, 'nodeId', fc.oneof(lengths('n', 0, 1, 128, 129), junk)),
  withKey(validEnrollment, 'controlPlaneUrl', urlEdge),
  withKey(validEnrollment, 'enrolledAt', intEdge),
  withKey(validEnrollment, 'heartbeatSeconds', fc.oneof(intEdge, fc.constantFrom(86_400, 86_401))),
  withKey(validEnrollment, 'nodeKeyId', fc.oneof(fc.stringMatching(/^[0-9a-fA-F]{15,17}$/), junk)),
  withKey(validEnrollment, 'extra', junk),
  fc.jsonValue(),
);

// The checkers answer {ok, value}; the property compares the value, or null when refused.
const valueOf = <T>(check: (v: unknown) => { ok: boolean; value?: T }) => (v: unknown): T | null => {
  const r = check(v);
  return r.ok ? (r.value as T) : null;
};
const same = <T>(check: (v: unknown) => { ok: boolean; value?: T }, schema: z.ZodType<T>, files: fc.Arbitrary<unknown>, golden: Golden) =>
  assertSameAsSchema(valueOf(check), schema, files.map(throughJson), { numRuns: 2000, minAccepted: 201, maxAccepted: 1799, golden });

test('checkSeqFile accepts what the seq.json schema accepts and returns what it returns', () => {
  same(checkSeqFile, seqFileSchema, seqFile, { shape: 'agent-seq-file', from: 'checkSeqFile of src/agent/agent-file-checks.ts' });
});

test('checkActedFile accepts what the acted.json schema accepts and returns what it returns', () => {
  same(checkActedFile, actedFileSchema, actedFile, { shape: 'agent-acted-file', from: 'checkActedFile of src/agent/agent-file-checks.ts' });
});

test('checkOutboxFile accepts what outboxFileSchema accepts and returns what it returns', () => {
  same(checkOutboxFile, outboxFileSchema, outboxFile, { shape: 'outbox-file', from: 'checkOutboxFile of src/agent/agent-file-checks.ts' });
});

test('checkEnrollmentFile accepts what the enrollment.json schema accepts and returns what it returns', () => {
  same(checkEnrollmentFile, enrollmentFileSchema, enrollmentFile, { shape: 'enrollment-file', from: 'checkEnrollmentFile of src/agent/agent-file-checks.ts' });
});

test('a refused file names the key', () => {
  const bad = { schemaVersion: 1, acted: [{ attemptId: 'a', app: 'w', at: -1, answer: 'x' }] };
  recordGolden({ shape: 'agent-acted-file', from: 'checkActedFile of src/agent/agent-file-checks.ts' }, valueOf(checkActedFile), [bad]);
  // enrollment.json's heartbeatSeconds at its bounds, one past each and a fraction (for the golden file).
  const enrolled = { schemaVersion: 1, nodeId: 'n-1', controlPlaneUrl: 'https://cp.example:8443', enrolledAt: 1, heartbeatSeconds: 30, nodeKeyId: '0123456789abcdef' };
  recordGolden({ shape: 'enrollment-file', from: 'checkEnrollmentFile of src/agent/agent-file-checks.ts' }, valueOf(checkEnrollmentFile), [0, 1, 30.5, 86_400, 86_401].map((heartbeatSeconds) => ({ ...enrolled, heartbeatSeconds })));
  assert.deepEqual(checkActedFile(bad), {
    ok: false,
    where: 'acted.0.at',
    message: 'not a time in epoch ms',
  });
});
