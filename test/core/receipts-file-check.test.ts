import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { assertSameAsSchema, attemptIdEdge, envelopeEdge, junk, throughJson, validEnvelope, withKey, type Obj } from '../helpers/check-arbitraries.js';
import { checkReceiptPayload } from '../../src/core/receipt-check.js';
import { checkReceiptSeqFile, checkReceiptsFile, receiptPayloadChecker, receiptSeqFileChecker, receiptsFileChecker } from '../../src/core/receipts-file-check.js';
import { receiptPayloadSchema, receiptSeqFileSchema, receiptsFileSchema } from '../../src/core/receipt-schema.js';

// The helper reads its receipt store without zod (receipts-file-check.ts); this holds each check
// to its schema of receipt-schema.ts both ways: the same files accepted, the same values returned.
// Each file is a valid one with at most one field moved to the edge of its rule or to junk, so
// each rule decides a verdict on its own.

// Around a seq's rule (a positive safe integer): both ends, one past each, fractions, junk.
const seqEdge = fc.oneof(fc.constantFrom(0, 1, -1, 2 ** 53 - 1, 2 ** 53, 1.5, -0, '1'), fc.integer(), junk);
const ENVELOPE = { payload: 'p', sig: 's', keyId: '0123456789abcdef' };
const validTransaction = fc.record({ attemptId: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,5}$/), seq: fc.integer({ min: 1, max: 1e9 }) }) as fc.Arbitrary<Obj>;
const transactionEdge = fc.oneof(
  withKey(validTransaction, 'attemptId', attemptIdEdge),
  withKey(validTransaction, 'seq', seqEdge),
  withKey(validTransaction, 'extra', junk),
  fc.record({ attemptId: fc.constant('cli-1') }),
  fc.record({ seq: fc.constant(1) }),
  junk,
);
const validFile = fc.record({
  schemaVersion: fc.constant(1),
  app: fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,6}$/),
  lastTransaction: fc.oneof(fc.constant(null), validTransaction),
  receipts: fc.array(validEnvelope, { maxLength: 4 }),
}) as fc.Arbitrary<Obj>;
const receiptsFileInput = fc.oneof(
  { arbitrary: validFile, weight: 8 },
  withKey(validFile, 'schemaVersion', fc.oneof(fc.constantFrom(0, 2, '1', 1.5), junk)),
  withKey(validFile, 'app', fc.oneof(fc.constantFrom('Web', '-x', 'a'.repeat(63), 'a'.repeat(64), '', 'web.json'), junk)),
  { arbitrary: withKey(validFile, 'lastTransaction', transactionEdge), weight: 3 },
  // One envelope at the edge of its rule among valid ones.
  { arbitrary: fc.tuple(validFile, fc.array(validEnvelope, { maxLength: 2 }), envelopeEdge).map(([f, a, e]) => ({ ...f, receipts: [...a, e, ...a] })), weight: 3 },
  // The array's limit: 1024 envelopes and one past it.
  withKey(validFile, 'receipts', fc.constantFrom(1023, 1024, 1025).map((n) => Array.from({ length: n }, () => ({ ...ENVELOPE })))),
  withKey(validFile, 'receipts', junk),
  withKey(validFile, 'extra', junk),
  withKey(validFile, '__proto__', fc.constantFrom({}, null, 1)),
  // A key missing.
  fc.tuple(validFile, fc.constantFrom('schemaVersion', 'app', 'lastTransaction', 'receipts')).map(([f, k]) => Object.fromEntries(Object.entries(f).filter(([key]) => key !== k))),
  fc.jsonValue(),
);

test('checkReceiptsFile accepts what receiptsFileSchema accepts and returns what it returns', () => {
  assertSameAsSchema(checkReceiptsFile, receiptsFileSchema, receiptsFileInput.map(throughJson), { numRuns: 2000, minAccepted: 400, maxAccepted: 1600, golden: { shape: 'receipts-file', from: 'checkReceiptsFile of src/core/receipts-file-check.ts' } });
  // And on values not read from JSON (an own key holding undefined is still a key).
  assertSameAsSchema(checkReceiptsFile, receiptsFileSchema, fc.oneof(receiptsFileInput, withKey(validFile, 'extra', fc.constant(undefined))), { numRuns: 1000, minAccepted: 100, maxAccepted: 850, golden: { shape: 'receipts-file', from: 'checkReceiptsFile of src/core/receipts-file-check.ts' } });
});

const validSeq = fc.record({ schemaVersion: fc.constant(1), next: fc.integer({ min: 1, max: 2 ** 40 }) }) as fc.Arbitrary<Obj>;
const seqFileInput = fc.oneof(
  { arbitrary: validSeq, weight: 3 },
  withKey(validSeq, 'schemaVersion', fc.oneof(fc.constantFrom(0, 2, '1'), junk)),
  { arbitrary: withKey(validSeq, 'next', seqEdge), weight: 2 },
  withKey(validSeq, 'extra', junk),
  withKey(validSeq, '__proto__', fc.constantFrom({}, null)),
  fc.record({ schemaVersion: fc.constant(1) }),
  fc.record({ next: fc.constant(1) }),
  fc.jsonValue(),
);

test('checkReceiptSeqFile accepts what receiptSeqFileSchema accepts and returns what it returns', () => {
  assertSameAsSchema(checkReceiptSeqFile, receiptSeqFileSchema, seqFileInput.map(throughJson), { numRuns: 2000, minAccepted: 400, maxAccepted: 1600, golden: { shape: 'receipt-seq-file', from: 'checkReceiptSeqFile of src/core/receipts-file-check.ts' } });
  assertSameAsSchema(checkReceiptSeqFile, receiptSeqFileSchema, fc.oneof(seqFileInput, withKey(validSeq, 'extra', fc.constant(undefined))), { numRuns: 500, minAccepted: 40, maxAccepted: 420, golden: { shape: 'receipt-seq-file', from: 'checkReceiptSeqFile of src/core/receipts-file-check.ts' } });
});

// The Checkers are these checks (and checkReceiptPayload, held to its schema by
// receipt-check.test.ts) over the schemas that word their refusals.
test('the receipt Checkers pair each check with its schema', async () => {
  assert.equal(receiptsFileChecker.check, checkReceiptsFile);
  assert.equal(await receiptsFileChecker.schema(), receiptsFileSchema);
  assert.equal(receiptSeqFileChecker.check, checkReceiptSeqFile);
  assert.equal(await receiptSeqFileChecker.schema(), receiptSeqFileSchema);
  assert.equal(receiptPayloadChecker.check, checkReceiptPayload);
  assert.equal(await receiptPayloadChecker.schema(), receiptPayloadSchema);
});
