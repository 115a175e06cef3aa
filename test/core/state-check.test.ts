import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { assertSameAsSchema, intEdge, recordGolden, junk, lengths, MAX, versionEdge, withKey, type Obj } from '../helpers/check-arbitraries.js';
import { appStateChecker, checkAppState, checkQuarantineEntry } from '../../src/core/state-check.js';
import { appStateSchema, emptyAppState, quarantineEntrySchema } from '../../src/core/state-schemas.js';

// The helper reads state/<app>.json on every supervisor pass without zod (state-check.ts); this
// holds the checker to appStateSchema both ways. Each state is a valid one with at most one field
// moved to the edge of its rule or to junk. The quarantine record's keys must be versions: bad
// keys, "constructor", and "__proto__" (an own key after JSON.parse, which this zod skips
// unchecked and leaves out of the result) are mixed in.

const version = fc.constantFrom('1.0.0', '2.3.4-rc.1', '0.0.1', `1.2.3-${'x'.repeat(122)}`);
const epoch = fc.oneof(fc.nat(), fc.constant(MAX));
const validEntry = fc.record({ failures: fc.oneof(fc.nat(), fc.constant(MAX)), retryAfter: epoch }) as fc.Arbitrary<Obj>;
const entry = fc.oneof(
  { arbitrary: validEntry, weight: 8 },
  withKey(validEntry, 'failures', intEdge),
  withKey(validEntry, 'retryAfter', intEdge),
  withKey(validEntry, 'extra', junk),
  fc.record({ failures: fc.nat(), retryAfter: fc.nat() }, { requiredKeys: [] }),
  junk,
);
const badKey = fc.constantFrom('01.2.3', '1.2', '1.2.3+b', `1.2.3-${'x'.repeat(123)}`, '', 'constructor', 'toString', 'hasOwnProperty', '1', 'x');
// JSON text, so that "__proto__" is an own key of the parsed record (as a file gives it).
const protoKey = (rec: fc.Arbitrary<Obj>): fc.Arbitrary<Obj> =>
  fc.tuple(rec, fc.oneof(validEntry, junk)).map(([r, v]) => JSON.parse(`{"__proto__":${JSON.stringify(v)}${Object.keys(r).length ? ',' : ''}${JSON.stringify(r).slice(1)}`) as Obj);
const validQuarantine = fc.dictionary(version, validEntry, { maxKeys: 3 });
const quarantine = fc.oneof(
  { arbitrary: validQuarantine, weight: 6 },
  fc.dictionary(version, entry, { minKeys: 1, maxKeys: 3 }),
  fc.tuple(validQuarantine, badKey, fc.oneof(validEntry, junk)).map(([q, k, v]) => ({ ...q, [k]: v })),
  protoKey(validQuarantine),
  protoKey(fc.dictionary(version, entry, { maxKeys: 2 })),
  junk,
);
const validHold = fc.record({ by: fc.oneof(fc.string({ maxLength: 8 }), lengths('b', 256)), at: epoch, reason: fc.oneof(fc.string({ maxLength: 8 }), lengths('r', 512)) }) as fc.Arbitrary<Obj>;
const hold = fc.oneof(
  withKey(validHold, 'by', fc.oneof(lengths('b', 0, 256, 257), junk)),
  withKey(validHold, 'at', intEdge),
  withKey(validHold, 'reason', fc.oneof(lengths('r', 0, 512, 513), junk)),
  withKey(validHold, 'extra', junk),
  fc.record({ by: fc.string(), at: fc.nat(), reason: fc.string() }, { requiredKeys: [] }),
  junk,
);
const validBlocked = fc.record({ reason: fc.oneof(fc.string({ maxLength: 8 }), lengths('r', 64)), message: fc.oneof(fc.string({ maxLength: 8 }), lengths('m', 512)), since: epoch }, { requiredKeys: ['reason', 'since'] }) as fc.Arbitrary<Obj>;
const blocked = fc.oneof(
  withKey(validBlocked, 'reason', fc.oneof(lengths('r', 0, 64, 65), junk)),
  withKey(validBlocked, 'message', fc.oneof(lengths('m', 0, 512, 513), junk)),
  withKey(validBlocked, 'since', intEdge),
  withKey(validBlocked, 'extra', junk),
  fc.record({ reason: fc.string(), since: fc.nat() }, { requiredKeys: [] }),
  junk,
);
const valid = fc.record({
  schemaVersion: fc.constant(1),
  previous: fc.option(version),
  highestActive: fc.option(version),
  quarantine: validQuarantine,
  hold: fc.option(validHold),
  blocked: fc.option(validBlocked),
}) as fc.Arbitrary<Obj>;
const state = fc.oneof(
  { arbitrary: valid, weight: 8 },
  withKey(valid, 'schemaVersion', fc.oneof(fc.constantFrom(0, 2, '1'), junk)),
  withKey(valid, 'previous', versionEdge),
  withKey(valid, 'highestActive', versionEdge),
  { arbitrary: withKey(valid, 'quarantine', quarantine), weight: 6 },
  { arbitrary: withKey(valid, 'hold', hold), weight: 2 },
  { arbitrary: withKey(valid, 'blocked', blocked), weight: 2 },
  withKey(valid, 'extra', junk),
  fc.record({ schemaVersion: fc.constant(1), previous: fc.constant(null), highestActive: fc.constant(null), quarantine: fc.constant({}), hold: fc.constant(null), blocked: fc.constant(null) }, { requiredKeys: [] }),
  fc.jsonValue(),
);

test('checkAppState accepts what appStateSchema accepts and returns what it returns', () => {
  // Through JSON: JSON.parse keeps a "__proto__" key as an own key, as a file read gives it.
  assertSameAsSchema(checkAppState, appStateSchema, state.map((v) => JSON.parse(JSON.stringify(v) ?? 'null') as unknown), { numRuns: 4000, minAccepted: 1000, maxAccepted: 3000, golden: { shape: 'app-state', from: 'checkAppState of src/core/state-check.ts' } });
});

test('checkAppState leaves a "__proto__" quarantine key out and keeps the result a plain record', () => {
  const v = JSON.parse('{"schemaVersion":1,"previous":null,"highestActive":null,"quarantine":{"__proto__":{"polluted":1},"1.2.3":{"failures":1,"retryAfter":2}},"hold":null,"blocked":null}') as unknown;
  const mine = checkAppState(v);
  assert.deepEqual(mine, appStateSchema.parse(v));
  assert.equal(Object.getPrototypeOf(mine?.quarantine), Object.prototype);
  assert.deepEqual(Object.keys(mine?.quarantine ?? {}), ['1.2.3']);
  assert.equal((mine?.quarantine as Obj | undefined)?.polluted, undefined);
  recordGolden({ shape: 'app-state', from: 'checkAppState of src/core/state-check.ts' }, checkAppState, [v]);
});

// The write side checks the helper's own objects, not JSON: blocked.message may be present as
// undefined (zod keeps the key); a symbol key of the record is refused by both.
test('checkAppState on values that did not come through JSON', () => {
  const own = fc.oneof(
    withKey(valid, 'blocked', validBlocked.map((b) => ({ ...b, message: undefined }))),
    withKey(valid, 'quarantine', validQuarantine.map((q) => ({ ...q, [Symbol('s')]: { failures: 1, retryAfter: 1 } }))),
    withKey(valid, 'hold', fc.constant(undefined)),
    withKey(valid, 'quarantine', fc.constantFrom(Object.create(null) as Obj, [], new Map())),
  );
  assertSameAsSchema(checkAppState, appStateSchema, own, { numRuns: 400, minAccepted: 60, maxAccepted: 250, golden: { shape: 'app-state', from: 'checkAppState of src/core/state-check.ts' } });
  assert.deepEqual(checkAppState(emptyAppState()), emptyAppState());
  recordGolden({ shape: 'app-state', from: 'checkAppState of src/core/state-check.ts' }, checkAppState, [emptyAppState()]);
});

test('appStateChecker words a refusal as appStateSchema does', async () => {
  assert.equal((await appStateChecker.schema()) as unknown, appStateSchema);
});

// The quarantine entry is checked by one function for the state's record and for a journal's
// prior.quarantine; its bounds are held here directly, where each edge comes up often.
test('checkQuarantineEntry accepts what quarantineEntrySchema accepts and returns what it returns', () => {
  assertSameAsSchema(checkQuarantineEntry, quarantineEntrySchema, entry, { numRuns: 2000, minAccepted: 300, maxAccepted: 1800, golden: { shape: 'quarantine-entry', from: 'checkQuarantineEntry of src/core/state-check.ts' } });
});
