import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { assertSameAsSchema, junk, throughJson, withKey, type Obj } from '../helpers/check-arbitraries.js';
import { checkHostConfig } from '../../src/core/config-check.js';
import { hostConfigSchema } from '../../src/core/config-schema.js';

// Both daemons read the host config without zod (config-check.ts); this holds the checker to
// hostConfigSchema both ways: the same configs accepted, the same values (defaults filled in)
// returned. Each config is a valid one with at most one field moved to the edge of its rule or
// to junk, so each rule decides a verdict on its own.

// Around [min, max]: both ends, one past each, fractions, unsafe integers and junk.
const around = (min: number, max: number) =>
  fc.oneof({ arbitrary: fc.constantFrom(min, max, min - 1, max + 1, min + 0.5, 2 ** 53, -0), weight: 4 }, fc.integer({ min: Math.max(min - 2, -(2 ** 31)), max: Math.min(max + 2, 2 ** 31) }), junk);
// A valid strict object of `fields` (each [valid, edge]) with every field optional, or with one
// field moved to its edge, or an unknown key.
function section(fields: Record<string, [fc.Arbitrary<unknown>, fc.Arbitrary<unknown>]>): fc.Arbitrary<Obj> {
  const valid = fc.record(Object.fromEntries(Object.entries(fields).map(([k, [v]]) => [k, v])), { requiredKeys: [] }) as fc.Arbitrary<Obj>;
  return fc.oneof({ arbitrary: valid, weight: 4 * Object.keys(fields).length }, ...Object.entries(fields).map(([k, [, e]]) => withKey(valid, k, e)), withKey(valid, 'extra', junk));
}
const ranged = (min: number, max: number): [fc.Arbitrary<unknown>, fc.Arbitrary<unknown>] => [fc.integer({ min, max: Math.min(max, 2 ** 31) }), around(min, max)];
const MAX = Number.MAX_SAFE_INTEGER;
const DAY = 86_400_000;
const user: [fc.Arbitrary<unknown>, fc.Arbitrary<unknown>] = [fc.stringMatching(/^[a-z_][a-z0-9_.-]{0,6}$/), fc.oneof(fc.constantFrom('Root', '1a', 'a'.repeat(32), 'a'.repeat(33), ''), junk)];
const restart = section({ baseMs: ranged(0, DAY), capMs: ranged(0, DAY), maxAttempts: ranged(1, 1000), healthyMs: ranged(0, DAY) });
const quarantine = section({ baseMs: ranged(0, DAY * 30), capMs: ranged(0, DAY * 30) });
const processApp = section({
  runner: [fc.constant('process'), fc.oneof(fc.constantFrom('unit', 'Process'), junk)],
  user,
  group: user,
  keepReleases: ranged(2, 100),
  restart: [restart, junk],
  quarantine: [quarantine, junk],
  stopTimeoutMs: ranged(0, 3_600_000),
  logMaxBytes: ranged(64 * 1024, MAX),
});
const unitApp = section({
  runner: [fc.constant('unit'), fc.oneof(fc.constantFrom('process', 'units'), junk)],
  unit: [fc.stringMatching(/^[a-z][a-z0-9@-]{0,8}\.service$/), fc.oneof(fc.constantFrom('web', 'a b.service', `${'a'.repeat(250)}.service`, `${'a'.repeat(251)}.service`, '.service'), junk)],
  keepReleases: ranged(2, 100),
  quarantine: [quarantine, junk],
}).map((u) => ('runner' in u ? u : { ...u, runner: 'unit' }));
const appName = fc.oneof({ arbitrary: fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,6}$/), weight: 6 }, fc.constantFrom('Web', '-x', 'a'.repeat(63), 'a'.repeat(64), ''));
const apps = fc.dictionary(appName, fc.oneof({ arbitrary: processApp, weight: 3 }, { arbitrary: unitApp, weight: 3 }, junk), { maxKeys: 3 });
const urlEdge = fc.oneof(fc.constantFrom(' https://cp.example ', 'https://cp.\texample/a\nb', '\u00a0https://cp.example\u2028', 'http:cp.example', 'cp.example', '', 'a:b', 'https://exa mple'), junk);
const controlPlane = section({
  url: [fc.oneof(fc.constantFrom('https://cp.example:8443', 'http://127.0.0.1:8080/base'), fc.webUrl()), urlEdge],
  caFile: [fc.string({ minLength: 1, maxLength: 8 }), fc.oneof(fc.constant(''), junk)],
  insecure: [fc.boolean(), junk],
}).map((c) => ('url' in c ? c : { ...c, url: 'https://cp.example:8443' }));
const config = section({
  apps: [apps, junk],
  controlPlane: [controlPlane, junk],
  api: [section({ idleTimeoutMs: ranged(100, 3_600_000), maxConnections: ranged(2, 10_000), maxRequestBytes: ranged(1024, 1024 * 1024) }), junk],
  fetch: [
    section({
      deadlineMs: ranged(1000, DAY),
      minBytesPerSecond: ranged(0, MAX),
      minSpeedWindowMs: ranged(100, 3_600_000),
      maxRedirects: ranged(0, 20),
      caFile: [fc.string({ minLength: 1, maxLength: 8 }), fc.oneof(fc.constant(''), junk)],
      diskReserveBytes: ranged(0, MAX),
      maxUnsignedBytes: ranged(1, MAX),
    }),
    junk,
  ],
  extract: [section({ maxEntries: ranged(1, MAX), maxBytes: ranged(1, MAX), maxPathLength: ranged(1, 4096), maxDepth: ranged(1, 1024), maxRatio: ranged(1, MAX) }), junk],
  metrics: [
    section({
      textfile: [
        fc.oneof(fc.constantFrom('/var/lib/prometheus/node-exporter/steward.prom', '/a.prom'), fc.stringMatching(/^\/[a-z/]{0,8}[a-z]\.prom$/)),
        fc.oneof(fc.constantFrom('steward.prom', '/x/.prom', '/.prom', '/x.prom/', '/x.txt', '/x.prom\0', `/${'a'.repeat(4091)}.prom`, `/${'a'.repeat(4090)}.prom`, ''), junk),
      ],
    }),
    junk,
  ],
  supervisor: [section({ processRunner: [fc.constantFrom('auto', 'systemd', 'detached'), fc.oneof(fc.constantFrom('Auto', 'none', ''), junk)], sweepMs: ranged(100, 3_600_000), pollMs: ranged(50, 600_000), logCheckMs: ranged(100, 3_600_000) }), junk],
});
// The deepest rules (an app's restart and quarantine) also each on their own, or they are rarely reached.
const deep = fc
  .tuple(fc.stringMatching(/^[a-z][a-z0-9]{0,4}$/), restart, quarantine, fc.boolean())
  .map(([name, r, q, unit]) => ({ apps: { [name]: unit ? { runner: 'unit', unit: 'x.service', quarantine: q } : { restart: r, quarantine: q } } }));
test('checkHostConfig accepts what hostConfigSchema accepts and returns what it returns, defaults included', () => {
  const inputs = fc.oneof({ arbitrary: config, weight: 8 }, { arbitrary: deep, weight: 3 }, fc.jsonValue()).map(throughJson);
  assertSameAsSchema(checkHostConfig, hostConfigSchema, inputs, { numRuns: 5000, minAccepted: 501, maxAccepted: 4499 });
});

test('an empty config is every default; an app without runner is a process app', () => {
  assert.deepEqual(checkHostConfig({}), hostConfigSchema.parse({}));
  const v = { apps: { web: { user: 'web', group: 'web' } }, controlPlane: { url: ' https://cp.example ' } };
  assert.deepEqual(checkHostConfig(v), hostConfigSchema.parse(v));
  assert.equal(checkHostConfig({ apps: { web: { runner: 'unit' } } }), null);
  assert.equal(checkHostConfig({ api: null }), null);
});
