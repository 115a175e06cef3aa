import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StewardError } from '../../src/core/errors.js';
import { journalSchema } from '../../src/core/journal-schema.js';
import { mustParse } from '../../src/core/must-parse.js';
import { markerSchema, releaseFileSchema } from '../../src/core/release-schemas.js';
import { appStateSchema, emptyAppState } from '../../src/core/state-schemas.js';

// A refusal names the field and the rule, in zod's English words (zod/mini words every issue
// "Invalid input" unless a locale is set: core/zod-mini.ts sets it), or the schema's own.

const refusal = (f: () => unknown): string => {
  try {
    f();
  } catch (err) {
    assert.ok(err instanceof StewardError, String(err));
    return `${err.code} ${err.message}`;
  }
  assert.fail('not refused');
};

const JOURNAL = {
  schemaVersion: 1,
  attemptId: 'cli-1',
  app: 'web',
  fromVersion: null,
  targetVersion: '1.0.0',
  integrity: `sha512-${'A'.repeat(86)}==`,
  outcome: 'active',
  startedAt: 1,
  updatedAt: 2,
};

test('a bound, a type and an integer rule are named with the field they hold', () => {
  assert.equal(refusal(() => mustParse(journalSchema, { ...JOURNAL, reason: { code: 'c'.repeat(65), message: '' } }, 'INTERNAL', 'journal')), 'INTERNAL journal: reason.code: Too big: expected string to have <=64 characters');
  assert.equal(refusal(() => mustParse(journalSchema, { ...JOURNAL, startedAt: 'soon' }, 'STATE_INVALID', 'j.json')), 'STATE_INVALID j.json: startedAt: Invalid input: expected number, received string');
  const q = { ...emptyAppState(), quarantine: { '1.0.0': { failures: 1.5, retryAfter: 0 } } };
  assert.equal(refusal(() => mustParse(appStateSchema, q, 'STATE_INVALID', 's.json')), 'STATE_INVALID s.json: quarantine.1.0.0.failures: Invalid input: expected int, received number');
});

test('an unknown key, a missing one and a bad record key are named', () => {
  assert.equal(refusal(() => mustParse(appStateSchema, { ...emptyAppState(), extra: 1 }, 'STATE_INVALID', 's.json')), 'STATE_INVALID s.json: (top level): Unrecognized key: "extra" (extra)');
  assert.match(refusal(() => mustParse(markerSchema, { schemaVersion: 1 }, 'INTERNAL', 'marker')), /^INTERNAL marker: tarballIntegrity: Invalid input: expected string, received undefined; /);
  const badKey = { ...emptyAppState(), quarantine: { 'not-a-version': { failures: 1, retryAfter: 0 } } };
  assert.match(refusal(() => mustParse(appStateSchema, badKey, 'STATE_INVALID', 's.json')), /^STATE_INVALID s\.json: quarantine\.not-a-version: versions are semver without build metadata/);
});

test("a schema's own rule is worded as the schema words it", () => {
  assert.equal(refusal(() => mustParse(releaseFileSchema, { name: 'web', version: '1.0.0', health: { tcp: ':80' } }, 'RELEASE_INVALID', 'steward-release.json')), 'RELEASE_INVALID steward-release.json: health.tcp: health.tcp must be a loopback host:port');
});
