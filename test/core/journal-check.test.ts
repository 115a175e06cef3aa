import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { appNameEdge, assertSameAsSchema, attemptIdEdge, intEdge, INTEGRITY, integrityEdge, junk, lengths, MAX, throughJson, versionEdge, withKey, type Obj } from '../helpers/check-arbitraries.js';
import { checkJournal, journalChecker } from '../../src/core/journal-check.js';
import { journalSchema } from '../../src/core/journal-schema.js';

// The helper reads and writes journal/<app>.json without zod (journal-check.ts); this holds the
// checker to journalSchema both ways. Each journal is a valid one with at most one field moved
// to the edge of its rule or to junk, so each rule decides a verdict on its own.

const version = fc.constantFrom('1.0.0', '2.3.4-rc.1', `1.2.3-${'x'.repeat(122)}`);
const epoch = fc.oneof(fc.nat(), fc.constant(MAX));
const quarantine = fc.record({ failures: fc.oneof(fc.nat(), fc.constant(MAX)), retryAfter: epoch });
const validPrior = fc.record({ previous: fc.option(version), highestActive: fc.option(version), quarantine: fc.option(quarantine) }) as fc.Arbitrary<Obj>;
const prior = fc.oneof(
  { arbitrary: validPrior, weight: 6 },
  withKey(validPrior, 'previous', versionEdge),
  withKey(validPrior, 'highestActive', versionEdge),
  withKey(validPrior, 'quarantine', fc.oneof(junk, withKey(quarantine, 'failures', intEdge), withKey(quarantine, 'retryAfter', intEdge), withKey(quarantine, 'extra', junk))),
  withKey(validPrior, 'extra', junk),
  fc.record({ previous: fc.option(version), highestActive: fc.option(version), quarantine: fc.option(quarantine) }, { requiredKeys: [] }),
);
const OPTIONAL = {
  retryAfter: epoch,
  rollbackHealthy: fc.boolean(),
  reason: fc.record({ code: fc.oneof(fc.string({ maxLength: 8 }), lengths('c', 64)), message: fc.oneof(fc.string({ maxLength: 8 }), lengths('m', 2048)) }),
  logFile: fc.oneof(fc.string({ maxLength: 8 }), lengths('l', 4096)),
  prior: validPrior,
};
const valid = fc.record(
  {
    schemaVersion: fc.constant(1),
    attemptId: fc.oneof(fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,5}$/), lengths('a', 128)),
    app: fc.oneof(fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,6}$/), lengths('a', 63)),
    fromVersion: fc.option(version),
    targetVersion: version,
    integrity: fc.constant(INTEGRITY),
    outcome: fc.constantFrom('activating', 'active', 'rolled-back', 'failed'),
    startedAt: epoch,
    updatedAt: epoch,
    ...OPTIONAL,
  },
  { requiredKeys: ['schemaVersion', 'attemptId', 'app', 'fromVersion', 'targetVersion', 'integrity', 'outcome', 'startedAt', 'updatedAt'] },
) as fc.Arbitrary<Obj>;
const journal = fc.oneof(
  { arbitrary: valid, weight: 12 },
  withKey(valid, 'schemaVersion', fc.oneof(fc.constantFrom(0, 2, '1', 1.5), junk)),
  withKey(valid, 'attemptId', attemptIdEdge),
  withKey(valid, 'app', appNameEdge),
  withKey(valid, 'fromVersion', versionEdge),
  withKey(valid, 'targetVersion', fc.oneof(versionEdge, fc.constant(null))),
  withKey(valid, 'integrity', integrityEdge),
  withKey(valid, 'outcome', fc.oneof(fc.constantFrom('refused', 'Active'), junk)),
  withKey(valid, 'startedAt', intEdge),
  withKey(valid, 'updatedAt', intEdge),
  withKey(valid, 'retryAfter', intEdge),
  withKey(valid, 'rollbackHealthy', junk),
  withKey(
    valid,
    'reason',
    fc.oneof(
      fc.record({ code: fc.oneof(lengths('c', 0, 64, 65), junk), message: fc.oneof(lengths('m', 0, 2048, 2049), junk), extra: fc.option(junk, { nil: undefined, freq: 3 }) }, { requiredKeys: [] }),
      junk,
    ),
  ),
  withKey(valid, 'logFile', fc.oneof(lengths('l', 0, 4096, 4097), junk)),
  withKey(valid, 'prior', fc.oneof({ arbitrary: prior, weight: 4 }, junk)),
  withKey(valid, 'extra', junk),
  withKey(valid, '__proto__', junk),
  fc.jsonValue(),
);

test('checkJournal accepts what journalSchema accepts and returns what it returns', () => {
  assertSameAsSchema(checkJournal, journalSchema, journal.map(throughJson), { numRuns: 4000, minAccepted: 1200, maxAccepted: 3000, golden: { shape: 'journal', from: 'checkJournal of src/core/journal-check.ts' } });
});

// The write side checks the helper's own objects, not JSON: an optional key may be present as
// undefined, which zod keeps as an own key (and JSON.stringify then drops).
test('checkJournal keeps an optional key present as undefined, as journalSchema does', () => {
  const undef = fc.tuple(valid, fc.subarray(Object.keys(OPTIONAL), { minLength: 1 })).map(([v, ks]) => ({ ...v, ...Object.fromEntries(ks.map((k) => [k, undefined])) }));
  const inputs = fc.oneof({ arbitrary: undef, weight: 4 }, withKey(valid, 'fromVersion', fc.constant(undefined)), withKey(valid, 'extra', fc.constant(undefined)));
  assertSameAsSchema(checkJournal, journalSchema, inputs, { numRuns: 500, minAccepted: 250, maxAccepted: 450, golden: { shape: 'journal', from: 'checkJournal of src/core/journal-check.ts' } });
});

test('journalChecker words a refusal as journalSchema does', async () => {
  assert.equal((await journalChecker.schema()) as unknown, journalSchema);
});
