import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { appNameEdge, assertSameAsSchema, recordGolden, attemptIdEdge, envelopeEdge, INTEGRITY, integrityEdge, junk, lengths, throughJson, validEnvelope, versionEdge, withKey, type SchemaLike, type Obj } from '../helpers/check-arbitraries.js';
import { ALL_OPS, type OpName } from '../../src/protocol/ops.js';
import { requestCheckers, requestEnvelopeChecker } from '../../src/protocol/request-check.js';
import { requestEnvelopeSchema, requestSchemas } from '../../src/protocol/schemas.js';

// The helper checks local API requests without zod (request-check.ts); this holds each op's
// checker to its schema of schemas.ts both ways: the same requests accepted, the same values
// returned. Each request is a valid one of some op (every field present or not), sent as that
// op or another, with at most one field moved to the edge of its rule or to junk.

const field: Record<string, [fc.Arbitrary<unknown>, fc.Arbitrary<unknown>]> = {
  app: [fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,6}$/), appNameEdge],
  version: [fc.constantFrom('1.0.0', '2.3.4-rc.1'), versionEdge],
  to: [fc.constantFrom('1.0.0', '0.9.0'), fc.oneof(fc.constantFrom('v1.0.0', '1.0'), junk)],
  manifest: [validEnvelope, envelopeEdge],
  integrity: [fc.constant(INTEGRITY), integrityEdge],
  path: [fc.string({ minLength: 1, maxLength: 8 }), fc.oneof(lengths('p', 0, 1, 4096, 4097), junk)],
  upload: [fc.nat(), fc.oneof(fc.constantFrom(0, -1, 0.5, 2 ** 53 - 1, 2 ** 53), junk)],
  allowUnsigned: [fc.boolean(), junk],
  allowDowngrade: [fc.boolean(), junk],
  force: [fc.boolean(), junk],
  noWait: [fc.boolean(), junk],
  attemptId: [fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,5}$/), attemptIdEdge],
  by: [fc.string({ maxLength: 8 }), fc.oneof(lengths('b', 0, 128, 129), fc.constantFrom('a\nb', '\u001b[2J', 'x\u007f', '\u0085', '\u202eroot', 'a\u2028b', 'tab\there'), junk)],
  keep: [fc.integer({ min: 2, max: 100 }), fc.oneof(fc.constantFrom(1, 2, 100, 101, 2.5), junk)],
};
const SOURCE = ['app', 'version', 'manifest', 'integrity', 'path', 'upload', 'allowUnsigned', 'allowDowngrade', 'force', 'attemptId'];
// Each op's fields, the required first (as in schemas.ts).
const FIELDS: Record<OpName, { required: string[]; optional: string[] }> = {
  status: { required: [], optional: ['app'] },
  releases: { required: ['app'], optional: [] },
  receipts: { required: [], optional: ['app'] },
  stage: { required: ['app', 'version'], optional: SOURCE.slice(2) },
  update: { required: ['app', 'version'], optional: [...SOURCE.slice(2), 'noWait', 'by'] },
  rollback: { required: ['app'], optional: ['to', 'attemptId', 'noWait', 'by'] },
  recover: { required: ['app'], optional: ['to', 'attemptId', 'by'] },
  prune: { required: ['app'], optional: ['keep'] },
  'release-hold': { required: ['app'], optional: [] },
  start: { required: ['app'], optional: ['by'] },
  stop: { required: ['app'], optional: ['by'] },
  restart: { required: ['app'], optional: ['by'] },
};
const idValid = fc.oneof(fc.string({ maxLength: 8 }), fc.integer());
const idEdge = fc.oneof(lengths('i', 128, 129), fc.constantFrom(2 ** 53 - 1, 2 ** 53, -(2 ** 53), 1.5, -0), junk);

function valid(op: OpName): fc.Arbitrary<Obj> {
  const { required, optional } = FIELDS[op];
  const keys = [...required, ...optional];
  const model: Record<string, fc.Arbitrary<unknown>> = { v: fc.constant(1), id: idValid, op: fc.constant(op), ...Object.fromEntries(keys.map((k) => [k, field[k]![0]])) };
  return fc.record(model, { requiredKeys: ['v', 'id', 'op', ...required] }) as fc.Arbitrary<Obj>;
}
function request(op: OpName): fc.Arbitrary<unknown> {
  const v = valid(op);
  const { required, optional } = FIELDS[op];
  return fc.oneof(
    { arbitrary: v, weight: 12 },
    // A field of this op, or of another op, at its edge.
    ...[...required, ...optional, 'keep', 'to', 'by', 'path'].map((k) => withKey(v, k, field[k]![1])),
    ...required.map((k) => v.map((o) => Object.fromEntries(Object.entries(o).filter(([key]) => key !== k)))),
    withKey(v, 'v', fc.oneof(fc.constantFrom(0, 2, '1'), junk)),
    withKey(v, 'id', idEdge),
    withKey(v, 'op', fc.oneof(fc.constantFrom(...ALL_OPS), lengths('o', 64, 65), junk)),
    withKey(v, 'extra', junk),
    fc.jsonValue(),
  );
}

for (const op of ALL_OPS) {
  test(`the ${op} request checker accepts what its schema accepts and returns what it returns`, () => {
    const check = requestCheckers[op].check as (v: unknown) => Obj | null;
    assertSameAsSchema(check, requestSchemas[op] as unknown as SchemaLike<Obj>, request(op).map(throughJson), { numRuns: 600, minAccepted: 120, maxAccepted: 500, golden: { shape: `request.${op}`, from: 'requestCheckers of src/protocol/request-check.ts' } });
  });
}

test('an optional key sent as undefined (never from JSON) gets the same verdict and value as from its schema', () => {
  for (const op of ALL_OPS) {
    for (const key of [...FIELDS[op].optional, 'app']) {
      const raw = { v: 1, id: 1, op, app: 'web', version: '1.0.0', [key]: undefined };
      const schema = requestSchemas[op].safeParse(raw);
      assert.deepEqual(requestCheckers[op].check(raw), schema.success ? schema.data : null, `${op} ${key}`);
      recordGolden({ shape: `request.${op}`, from: 'requestCheckers of src/protocol/request-check.ts' }, requestCheckers[op].check, [raw]);
    }
  }
});

test('the request envelope checker accepts what requestEnvelopeSchema accepts and returns what it returns', () => {
  const any = fc.oneof(...ALL_OPS.map((op) => request(op)));
  assertSameAsSchema(requestEnvelopeChecker.check, requestEnvelopeSchema, any.map(throughJson), { numRuns: 2000, minAccepted: 800, maxAccepted: 1900, golden: { shape: 'request-envelope', from: 'requestEnvelopeChecker of src/protocol/request-check.ts' } });
  // JSON.parse makes "__proto__" an own key; the loose envelope leaves it out, as zod does.
  const proto = JSON.parse('{"v":1,"id":1,"op":"status","__proto__":{"x":1}}');
  const z = requestEnvelopeSchema.safeParse(proto);
  assert.deepEqual(requestEnvelopeChecker.check(proto), z.success ? z.data : null);
  assert.equal(Object.getPrototypeOf(requestEnvelopeChecker.check(proto)), Object.prototype);
  assert.deepEqual(requestCheckers.status.check(proto), null, 'an unknown key, even __proto__, is refused by a strict request');
  recordGolden({ shape: 'request-envelope', from: 'requestEnvelopeChecker of src/protocol/request-check.ts' }, requestEnvelopeChecker.check, [proto]);
  recordGolden({ shape: 'request.status', from: 'requestCheckers of src/protocol/request-check.ts' }, requestCheckers.status.check, [proto]);
});

test("each request checker words a refusal with its own op's schema", async () => {
  for (const op of ALL_OPS) assert.equal(await requestCheckers[op].schema(), requestSchemas[op], op);
  assert.equal(await requestEnvelopeChecker.schema(), requestEnvelopeSchema);
});
