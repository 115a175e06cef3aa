import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { assertSameAsSchema, junk, lengths, recordGolden, throughJson, withKey, type Obj } from '../../helpers/check-arbitraries.js';
import { checkNodeState, nodeStateChecker } from '../../../src/helper/receipts/node-id.js';
import { nodeStateSchema } from '../../../src/helper/receipts/node-state-schema.js';

// The helper reads state/node.json without zod (checkNodeState); this holds the check to
// nodeStateSchema, a loose object, both ways: the same files accepted and the same values
// returned, other keys kept as they are (but for "__proto__", which zod 4 drops).

// Keys enrollment might add, and ones that are special to a JavaScript object.
const otherKey = fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'controlPlaneUrl'));
const others = fc.array(fc.tuple(otherKey, fc.jsonValue({ maxDepth: 2 })), { maxLength: 4 });
// Built as JSON.parse builds it: an own "__proto__" key stays an own key.
const build = (entries: [string, unknown][]): Obj => {
  const o: Obj = {};
  for (const [k, v] of entries) Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  return o;
};
const valid = fc.tuple(fc.string({ minLength: 1, maxLength: 8 }), others, fc.boolean()).map(([nodeId, rest, first]) => {
  const own: [string, unknown][] = [['schemaVersion', 1], ['nodeId', nodeId]];
  // The schema's keys first or last: neither order changes the verdict or the value.
  const extra = rest.filter(([k]) => k !== 'schemaVersion' && k !== 'nodeId');
  return build(first ? [...own, ...extra] : [...extra, ...own]);
});
const nodeState = fc.oneof(
  { arbitrary: valid, weight: 6 },
  withKey(valid, 'schemaVersion', fc.oneof(fc.constantFrom(0, 2, '1', 1.5, -0), junk)),
  { arbitrary: withKey(valid, 'nodeId', fc.oneof(lengths('n', 0, 1, 128, 129), junk)), weight: 2 },
  withKey(valid, 'extra', fc.constant(undefined)),
  fc.tuple(valid, fc.constantFrom('schemaVersion', 'nodeId')).map(([v, k]) => build(Object.entries(v).filter(([key]) => key !== k))),
  // A file whose schema keys hide behind "__proto__" (JSON.parse keeps it an own key).
  fc.string({ minLength: 1, maxLength: 4 }).map((n) => JSON.parse(`{"__proto__":{"schemaVersion":1,"nodeId":${JSON.stringify(n)}}}`) as unknown),
  fc.jsonValue(),
);

test('checkNodeState accepts what nodeStateSchema accepts and returns what it returns', () => {
  assertSameAsSchema(checkNodeState, nodeStateSchema, nodeState.map(throughJson), { numRuns: 3000, minAccepted: 600, maxAccepted: 2400, golden: { shape: 'node-state', from: 'checkNodeState of src/helper/receipts/node-id.ts' } });
  // And on values not read from JSON: undefined values, inherited keys.
  const inherited = fc.tuple(valid, fc.dictionary(fc.string({ maxLength: 4 }), junk, { maxKeys: 2 })).map(([v, proto]) => Object.assign(Object.create(proto) as Obj, v));
  assertSameAsSchema(checkNodeState, nodeStateSchema, fc.oneof(nodeState, inherited), { numRuns: 1000, minAccepted: 200, maxAccepted: 900, golden: { shape: 'node-state', from: 'checkNodeState of src/helper/receipts/node-id.ts' } });
});

test('checkNodeState keeps other keys and drops "__proto__", as nodeStateSchema does', async () => {
  const v = JSON.parse('{"schemaVersion":1,"nodeId":"n-1","__proto__":{"polluted":true},"enrolledAt":5}') as unknown;
  const mine = checkNodeState(v);
  assert.deepEqual(mine, { schemaVersion: 1, nodeId: 'n-1', enrolledAt: 5 });
  assert.equal(Object.getPrototypeOf(mine), Object.prototype);
  assert.deepEqual(mine, nodeStateSchema.parse(v));
  recordGolden({ shape: 'node-state', from: 'checkNodeState of src/helper/receipts/node-id.ts' }, checkNodeState, [v]);
  assert.equal(await nodeStateChecker.schema(), nodeStateSchema);
  assert.equal(nodeStateChecker.check, checkNodeState);
});
