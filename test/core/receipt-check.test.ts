import { test } from 'node:test';
import fc from 'fast-check';
import { appNameEdge, assertSameAsSchema, attemptIdEdge, intEdge, INTEGRITY, integrityEdge, junk, lengths, throughJson, versionEdge, withKey, type Obj } from '../helpers/check-arbitraries.js';
import { checkReceiptPayload } from '../../src/core/receipt-check.js';
import { receiptPayloadSchema } from '../../src/core/receipt-schema.js';

// The agent verifies receipts without zod (receipt-check.ts); this holds the payload check to
// receiptPayloadSchema both ways. Each payload is a valid one with at most one field moved to
// the edge of its rule or to junk, so each rule decides a verdict on its own.

const version = fc.constantFrom('1.0.0', '2.3.4-rc.1');
const valid = fc.record(
  {
    v: fc.constant(1),
    nodeId: fc.oneof(fc.constant(null), fc.string({ maxLength: 8 })),
    app: fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,6}$/),
    attemptId: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,5}$/),
    seq: fc.integer({ min: 1, max: 1e9 }),
    fromVersion: fc.oneof(fc.constant(null), version),
    targetVersion: version,
    integrity: fc.oneof(fc.constant(null), fc.constant(INTEGRITY)),
    outcome: fc.constantFrom('active', 'rolled-back', 'failed', 'refused'),
    startedAt: fc.nat(),
    updatedAt: fc.nat(),
    retryAfter: fc.nat(),
    rollbackHealthy: fc.boolean(),
    reason: fc.record({ code: fc.string({ maxLength: 8 }), message: fc.string({ maxLength: 8 }) }),
    logFile: fc.string({ maxLength: 8 }),
  },
  { requiredKeys: ['v', 'nodeId', 'app', 'attemptId', 'seq', 'fromVersion', 'targetVersion', 'integrity', 'outcome', 'startedAt', 'updatedAt'] },
) as fc.Arbitrary<Obj>;
const payload = fc.oneof(
  { arbitrary: valid, weight: 10 },
  withKey(valid, 'v', fc.oneof(fc.constantFrom(0, 2, '1'), junk)),
  withKey(valid, 'nodeId', fc.oneof(lengths('n', 0, 128, 129), junk)),
  withKey(valid, 'app', appNameEdge),
  withKey(valid, 'attemptId', attemptIdEdge),
  withKey(valid, 'seq', intEdge),
  withKey(valid, 'fromVersion', versionEdge),
  withKey(valid, 'targetVersion', fc.oneof(versionEdge, fc.constant(null))),
  withKey(valid, 'integrity', integrityEdge),
  withKey(valid, 'outcome', fc.oneof(fc.constantFrom('activating', 'Active'), junk)),
  withKey(valid, 'startedAt', intEdge),
  withKey(valid, 'updatedAt', intEdge),
  withKey(valid, 'retryAfter', intEdge),
  withKey(valid, 'rollbackHealthy', junk),
  withKey(
    valid,
    'reason',
    fc.oneof(
      fc.record({ code: fc.oneof(lengths('c', 64, 65), junk), message: fc.oneof(lengths('m', 2048, 2049), junk), extra: fc.option(junk, { nil: undefined, freq: 3 }) }, { requiredKeys: [] }),
      junk,
    ),
  ),
  withKey(valid, 'logFile', fc.oneof(lengths('l', 4096, 4097), junk)),
  withKey(valid, 'extra', junk),
  fc.jsonValue(),
);
test('checkReceiptPayload accepts what receiptPayloadSchema accepts and returns what it returns', () => {
  assertSameAsSchema(checkReceiptPayload, receiptPayloadSchema, payload.map(throughJson), { numRuns: 3000, minAccepted: 301, maxAccepted: 2699, golden: { shape: 'receipt-payload', from: 'checkReceiptPayload of src/core/receipt-check.ts' } });
});
