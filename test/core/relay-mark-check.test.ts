import { test } from 'node:test';
import fc from 'fast-check';
import { assertSameAsSchema, hex16, intEdge, junk, throughJson, withKey, type Obj } from '../helpers/check-arbitraries.js';
import { checkRelayMark } from '../../src/core/relay-mark.js';
import { relayMarkSchema } from '../../src/core/relay-mark-schema.js';

// The helper reads the agent's relay mark without zod (relay-mark.ts): the check is held to its
// schema both ways, on marks with at most one field moved to the edge of its rule or to junk.
const validMark = fc.record({ schemaVersion: fc.constant(1), helperKeyId: hex16, relayedSeq: fc.nat() }) as fc.Arbitrary<Obj>;
const markInput = fc.oneof(
  { arbitrary: validMark, weight: 4 },
  withKey(validMark, 'schemaVersion', fc.oneof(fc.constantFrom(0, 2, '1', 1.5), junk)),
  withKey(validMark, 'helperKeyId', fc.oneof(fc.stringMatching(/^[0-9a-fA-F]{15,17}$/), junk)),
  { arbitrary: withKey(validMark, 'relayedSeq', intEdge), weight: 2 },
  withKey(validMark, 'extra', junk),
  withKey(validMark, '__proto__', fc.constantFrom({}, null, 1)),
  fc.tuple(validMark, fc.constantFrom('schemaVersion', 'helperKeyId', 'relayedSeq')).map(([m, k]) => Object.fromEntries(Object.entries(m).filter(([key]) => key !== k))),
  fc.jsonValue(),
);

test('checkRelayMark accepts what relayMarkSchema accepts and returns what it returns', () => {
  assertSameAsSchema(checkRelayMark, relayMarkSchema, markInput.map(throughJson), { numRuns: 2000, minAccepted: 300, maxAccepted: 1700, golden: { shape: 'relay-mark', from: 'checkRelayMark of src/core/relay-mark.ts' } });
});
