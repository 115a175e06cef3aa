import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { appNameEdge, assertSameAsSchema, intEdge, junk, lengths, MAX, throughJson, versionEdge, withKey, type Obj } from '../helpers/check-arbitraries.js';
import { checkRunRecord, runRecordChecker } from '../../src/core/run-record-check.js';
import { runRecordSchema } from '../../src/core/run-record-schema.js';

// The helper reads supervisor/<app>.json for every app on every supervisor pass without zod
// (run-record-check.ts); this holds the checker to runRecordSchema both ways. Each record is a
// valid one with at most one field moved to the edge of its rule or to junk.

const version = fc.constantFrom('1.0.0', '2.3.4-rc.1', `1.2.3-${'x'.repeat(122)}`);
const epoch = fc.oneof(fc.nat(), fc.constant(MAX));
const validProc = fc.record({ pid: fc.oneof(fc.integer({ min: 1, max: 4194304 }), fc.constant(MAX)), startTicks: fc.oneof(fc.nat(), fc.constant(MAX)), bootId: fc.oneof(fc.string({ minLength: 1, maxLength: 8 }), lengths('b', 64)) }) as fc.Arbitrary<Obj>;
const proc = fc.oneof(
  withKey(validProc, 'pid', intEdge),
  withKey(validProc, 'startTicks', intEdge),
  withKey(validProc, 'bootId', fc.oneof(lengths('b', 0, 1, 64, 65), junk)),
  withKey(validProc, 'extra', junk),
  fc.record({ pid: fc.nat(), startTicks: fc.nat(), bootId: fc.string() }, { requiredKeys: [] }),
  junk,
);
const validExit = fc.record({ code: fc.option(fc.oneof(fc.integer(), fc.constantFrom(MAX, -MAX))), signal: fc.option(fc.oneof(fc.constantFrom('SIGTERM', 'SIGKILL'), lengths('S', 32))) }) as fc.Arbitrary<Obj>;
const exit = fc.oneof(
  withKey(validExit, 'code', intEdge),
  withKey(validExit, 'signal', fc.oneof(lengths('S', 0, 32, 33), junk)),
  withKey(validExit, 'extra', junk),
  fc.record({ code: fc.integer(), signal: fc.string() }, { requiredKeys: [] }),
  junk,
);
const validSupervisor = fc.record({
  state: fc.constantFrom('running', 'waiting', 'error', 'stopped'),
  attempts: fc.oneof(fc.nat(), fc.constant(MAX)),
  lastStartAt: fc.option(epoch),
  lastExitAt: fc.option(epoch),
  nextAttemptAt: fc.option(epoch),
  lastExit: fc.option(validExit),
  giveUpReason: fc.option(fc.oneof(fc.string({ maxLength: 8 }), lengths('g', 1024))),
}) as fc.Arbitrary<Obj>;
const supervisor = fc.oneof(
  withKey(validSupervisor, 'state', fc.oneof(fc.constantFrom('starting', 'Running'), junk)),
  withKey(validSupervisor, 'attempts', intEdge),
  withKey(validSupervisor, 'lastStartAt', intEdge),
  withKey(validSupervisor, 'lastExitAt', intEdge),
  withKey(validSupervisor, 'nextAttemptAt', intEdge),
  { arbitrary: withKey(validSupervisor, 'lastExit', exit), weight: 3 },
  withKey(validSupervisor, 'giveUpReason', fc.oneof(lengths('g', 0, 1024, 1025), junk)),
  withKey(validSupervisor, 'extra', junk),
  fc.record({ state: fc.constant('running'), attempts: fc.nat(), lastStartAt: fc.constant(null), lastExitAt: fc.constant(null), nextAttemptAt: fc.constant(null), lastExit: fc.constant(null), giveUpReason: fc.constant(null) }, { requiredKeys: [] }),
  junk,
);
const token = fc.stringMatching(/^[0-9a-f]{32}$/);
const OPTIONAL = { logOffset: fc.oneof(fc.nat(), fc.constant(MAX)), instance: token, supervisor: validSupervisor };
const valid = fc.record(
  {
    schemaVersion: fc.constant(1),
    app: fc.oneof(fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,6}$/), lengths('a', 63)),
    expected: fc.constantFrom('running', 'stopped'),
    version: fc.option(version),
    process: fc.option(validProc),
    startedAt: fc.option(epoch),
    ...OPTIONAL,
  },
  { requiredKeys: ['schemaVersion', 'app', 'expected', 'version', 'process', 'startedAt'] },
) as fc.Arbitrary<Obj>;
const record = fc.oneof(
  { arbitrary: valid, weight: 10 },
  withKey(valid, 'schemaVersion', fc.oneof(fc.constantFrom(0, 2, '1'), junk)),
  withKey(valid, 'app', appNameEdge),
  withKey(valid, 'expected', fc.oneof(fc.constantFrom('waiting', 'Running'), junk)),
  withKey(valid, 'version', versionEdge),
  { arbitrary: withKey(valid, 'process', proc), weight: 3 },
  withKey(valid, 'startedAt', intEdge),
  withKey(valid, 'logOffset', intEdge),
  withKey(valid, 'instance', fc.oneof(token.map((t) => t.toUpperCase()), token.map((t) => t.slice(1)), token.map((t) => `${t}0`), token.map((t) => `${t}\n`), junk)),
  { arbitrary: withKey(valid, 'supervisor', supervisor), weight: 6 },
  withKey(valid, 'extra', junk),
  withKey(valid, '__proto__', junk),
  fc.jsonValue(),
);

test('checkRunRecord accepts what runRecordSchema accepts and returns what it returns', () => {
  assertSameAsSchema(checkRunRecord, runRecordSchema, record.map(throughJson), { numRuns: 4000, minAccepted: 1000, maxAccepted: 3000, golden: { shape: 'run-record', from: 'checkRunRecord of src/core/run-record-check.ts' } });
});

// The write side checks the helper's own objects, not JSON: an optional key may be present as
// undefined, which zod keeps as an own key.
test('checkRunRecord keeps an optional key present as undefined, as runRecordSchema does', () => {
  const undef = fc.tuple(valid, fc.subarray(Object.keys(OPTIONAL), { minLength: 1 })).map(([v, ks]) => ({ ...v, ...Object.fromEntries(ks.map((k) => [k, undefined])) }));
  const inputs = fc.oneof({ arbitrary: undef, weight: 4 }, withKey(valid, 'process', fc.constant(undefined)), withKey(valid, 'extra', fc.constant(undefined)));
  assertSameAsSchema(checkRunRecord, runRecordSchema, inputs, { numRuns: 500, minAccepted: 250, maxAccepted: 450, golden: { shape: 'run-record', from: 'checkRunRecord of src/core/run-record-check.ts' } });
});

test('runRecordChecker words a refusal as runRecordSchema does', async () => {
  assert.equal((await runRecordChecker.schema()) as unknown, runRecordSchema);
});
