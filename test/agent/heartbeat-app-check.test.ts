import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { assertSameAsSchema, junk as anyJunk, recordGolden, withKey } from '../helpers/check-arbitraries.js';
import { readHeartbeatApp } from '../../src/agent/heartbeat-app-check.js';
import { heartbeatAppSchema } from '../../src/core/heartbeat-schema.js';

// The agent checks each heartbeat app without zod (heartbeat-app-check.ts); this holds it to
// heartbeatAppSchema both ways. Each candidate is a valid app with at most one field moved to
// the edge of its rule or to junk, so each rule decides a verdict on its own.

// Here an app's field may also be missing (undefined), not only of the wrong type.
const junk = fc.oneof(anyJunk, fc.constant(undefined));
const intEdge = fc.oneof(fc.integer({ min: -3, max: 5 }), fc.constantFrom(999_999, 1_000_000, 1_000_001, 2 ** 31 - 1, 2 ** 31, 2 ** 53 - 1, 2 ** 53, 0.5, -0, -1, NaN, Infinity), fc.integer(), junk);
const versionEdge = fc.oneof(fc.constantFrom('1.0.0', '01.2.3', '1.2', '1.2.3+b', `1.2.3-${'x'.repeat(122)}`, `1.2.3-${'x'.repeat(123)}`), junk);
const validSupervisor = fc.record(
  { state: fc.constantFrom('running', 'waiting', 'error', 'stopped'), pid: fc.integer({ min: 1, max: 2 ** 31 - 1 }), attempts: fc.integer({ min: 0, max: 1_000_000 }), since: fc.oneof(fc.constant(null), fc.nat()) },
  { requiredKeys: ['state', 'attempts', 'since'] },
);
const validApp = fc.record({
  name: fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,62}$/),
  current: fc.oneof(fc.constant(null), fc.constantFrom('1.0.0', '2.3.4-rc.1')),
  previous: fc.oneof(fc.constant(null), fc.constantFrom('0.9.0', '1.0.0-beta')),
  held: fc.boolean(),
  blocked: fc.boolean(),
  supervisor: validSupervisor,
});
const supervisorEdge = fc.oneof(
  withKey(validSupervisor, 'state', fc.oneof(fc.constantFrom('Running', 'running ', 'unknown', ''), junk)),
  withKey(validSupervisor, 'pid', intEdge),
  withKey(validSupervisor, 'attempts', intEdge),
  withKey(validSupervisor, 'since', intEdge),
  withKey(validSupervisor, 'extra', junk),
  junk,
);
const candidate = fc.oneof(
  validApp,
  withKey(validApp, 'name', fc.oneof(fc.constantFrom('Web', '-x', 'a'.repeat(63), 'a'.repeat(64), 'a.b', ''), junk)),
  withKey(validApp, 'current', versionEdge),
  withKey(validApp, 'previous', versionEdge),
  withKey(validApp, 'held', junk),
  withKey(validApp, 'blocked', junk),
  withKey(validApp, 'supervisor', supervisorEdge),
  withKey(validApp, 'extra', junk),
  junk,
  fc.jsonValue(),
);

test('readHeartbeatApp accepts what heartbeatAppSchema accepts and returns what it returns', () => {
  // Not through JSON: the agent checks the objects the helper's status answer parsed into.
  assertSameAsSchema(readHeartbeatApp, heartbeatAppSchema, candidate, { numRuns: 3000, minAccepted: 301, maxAccepted: 2699, golden: { shape: 'heartbeat-app', from: 'readHeartbeatApp of src/agent/heartbeat-app-check.ts' } });
});

test('__proto__ is an unknown key of an app and of its supervisor', () => {
  const ok = { name: 'web', current: '1.0.0', previous: null, held: false, blocked: false, supervisor: { state: 'running', attempts: 0, since: null } };
  assert.deepEqual(readHeartbeatApp(ok), ok);
  for (const text of [JSON.stringify(ok).replace('{"name"', '{"__proto__":{},"name"'), JSON.stringify(ok).replace('{"state"', '{"__proto__":{},"state"')]) {
    const v = JSON.parse(text);
    assert.equal(readHeartbeatApp(v), null, text);
    assert.equal(heartbeatAppSchema.safeParse(v).success, false, text);
    recordGolden({ shape: 'heartbeat-app', from: 'readHeartbeatApp of src/agent/heartbeat-app-check.ts' }, readHeartbeatApp, [v]);
  }
  // The supervisor's numbers at their bounds, one past each and a fraction (for the golden file: the sample
  // of the property above reaches them rarely).
  const edges = [
    ...[-1, 0, 0.5, 1_000_000, 1_000_001].map((attempts) => ({ ...ok, supervisor: { ...ok.supervisor, attempts } })),
    ...[0, 1, 1.5, 2 ** 31 - 1, 2 ** 31].map((pid) => ({ ...ok, supervisor: { ...ok.supervisor, pid } })),
    ...[-1, 0, 0.5, Number.MAX_SAFE_INTEGER, 2 ** 53].map((since) => ({ ...ok, supervisor: { ...ok.supervisor, since } })),
  ];
  recordGolden({ shape: 'heartbeat-app', from: 'readHeartbeatApp of src/agent/heartbeat-app-check.ts' }, readHeartbeatApp, [ok, ...edges]);
});
