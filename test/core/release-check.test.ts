import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { appNameEdge, assertSameAsSchema, hex16, recordGolden, intEdge, INTEGRITY, integrityEdge, junk, lengths, MAX, throughJson, versionEdge, withKey, type Obj } from '../helpers/check-arbitraries.js';
import { checkManifestPayload, checkMarker, checkReleaseFileShape, markerChecker, releaseFileChecker } from '../../src/core/release-check.js';
import { manifestPayloadSchema, markerSchema, releaseFileSchema } from '../../src/core/release-schemas.js';
import { refusalOf } from '../../src/core/checker.js';

// The helper reads the release marker, steward-release.json and the manifest payload without
// zod (release-check.ts); this holds each checker to its schema of release-schemas.ts both ways:
// the same values accepted, the same values (defaults filled in) returned. Each value is a valid
// one with at most one field moved to the edge of its rule or to junk, so each rule decides a
// verdict on its own. Values go through JSON (as the helper reads them) and also raw, where an
// explicit undefined, an inherited key or an odd prototype can reach the checker.

const around = (min: number, max: number) => fc.oneof({ arbitrary: fc.constantFrom(min, max, min - 1, max + 1, min + 0.5, 2 ** 53, -0), weight: 4 }, fc.integer({ min: min - 2, max: max + 2 }), junk);
const appName = fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,6}$/);
const version = fc.constantFrom('1.0.0', '2.3.4-rc.1', '0.0.0');

// Inputs as JSON gives them, and raw.
const both = (a: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> => fc.oneof(a.map(throughJson), a);

// ---- the marker

const TREE = `sha256-${'A'.repeat(43)}=`;
const validMarker = fc.record({
  schemaVersion: fc.constant(1),
  tarballIntegrity: fc.constant(INTEGRITY),
  treeDigest: fc.stringMatching(/^sha256-[A-Za-z0-9+/]{43}=$/),
  signed: fc.boolean(),
  keyId: fc.oneof(fc.constant(null), hex16),
  version,
  stagedAt: fc.nat(),
}) as fc.Arbitrary<Obj>;
const marker = fc.oneof(
  { arbitrary: validMarker, weight: 8 },
  withKey(validMarker, 'schemaVersion', fc.oneof(fc.constantFrom(0, 2, '1', 1.5, true, undefined), junk)),
  withKey(validMarker, 'tarballIntegrity', integrityEdge),
  withKey(validMarker, 'treeDigest', fc.oneof(fc.constantFrom(`sha256-${'A'.repeat(42)}=`, `sha256-${'A'.repeat(44)}=`, TREE.slice(0, -1), `sha512-${'A'.repeat(43)}=`, `sha256-${'A'.repeat(42)}-=`, `${TREE}\n`), junk)),
  withKey(validMarker, 'signed', junk),
  withKey(validMarker, 'keyId', fc.oneof(fc.stringMatching(/^[0-9a-fA-F]{15,17}$/), fc.constantFrom('0123456789ABCDEF', '0123456789abcdeg', undefined), junk)),
  withKey(validMarker, 'version', versionEdge),
  withKey(validMarker, 'stagedAt', intEdge),
  withKey(validMarker, 'extra', junk),
  validMarker.map((m) => {
    const { keyId: _, ...rest } = m;
    return rest;
  }),
  fc.jsonValue(),
);

test('checkMarker accepts what markerSchema accepts and returns what it returns', () => {
  assertSameAsSchema(checkMarker, markerSchema, both(marker), { numRuns: 3000, minAccepted: 600, maxAccepted: 2400, golden: { shape: 'marker', from: 'checkMarker of src/core/release-check.ts' } });
});

// ---- the manifest payload

const validManifest = fc.record({
  name: appName,
  version,
  url: fc.oneof(fc.webUrl(), fc.string({ minLength: 1, maxLength: 8 })),
  size: fc.integer({ min: 1, max: 2 ** 40 }),
  integrity: fc.constant(INTEGRITY),
  expires: fc.nat(),
}) as fc.Arbitrary<Obj>;
const manifest = fc.oneof(
  { arbitrary: validManifest, weight: 7 },
  withKey(validManifest, 'name', appNameEdge),
  withKey(validManifest, 'version', versionEdge),
  withKey(validManifest, 'url', fc.oneof(lengths('u', 0, 1, 4096, 4097), junk)),
  withKey(validManifest, 'size', intEdge),
  withKey(validManifest, 'integrity', integrityEdge),
  withKey(validManifest, 'expires', intEdge),
  withKey(validManifest, 'extra', junk),
  fc.jsonValue(),
);

test('checkManifestPayload accepts what manifestPayloadSchema accepts and returns what it returns', () => {
  assertSameAsSchema(checkManifestPayload, manifestPayloadSchema, both(manifest), { numRuns: 3000, minAccepted: 600, maxAccepted: 2400, golden: { shape: 'manifest-payload', from: 'checkManifestPayload of src/core/release-check.ts' } });
});

// ---- steward-release.json

// env keys: ^[A-Z_][A-Z0-9_]{0,127}$ at its edges, and keys a plain {} treats specially.
const envKey = fc.oneof(
  { arbitrary: fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,6}$/), weight: 3 },
  fc.constantFrom('_', 'A', 'A'.repeat(128), 'A'.repeat(129), 'a', '1A', 'A-B', 'A B', '', '__proto__', '__PROTO__', 'constructor', 'toString', '0', 'Ä'),
);
// env values: <= 4096 UTF-16 units, <= 4096 UTF-8 bytes, no NUL/CR/LF.
const envValue = fc.oneof(
  { arbitrary: fc.string({ maxLength: 8 }), weight: 4 },
  lengths('v', 0, 4096, 4097),
  lengths('é', 2048, 2049), // 2 bytes each
  lengths('€', 1365, 1366), // 3 bytes each
  lengths('😀', 1024, 1025), // 2 units and 4 bytes each
  lengths('\ud800', 1365, 1366), // a lone surrogate: 3 bytes (U+FFFD) each
  fc.constantFrom('a\nb', 'a\rb', 'a\0b', 'a\tb', '\u2028', `${'v'.repeat(4095)}\n`),
  // 4096 and 4097 bytes in fewer units.
  fc.constantFrom(`${'€'.repeat(1365)}a`, `${'€'.repeat(1365)}aa`, `${'é'.repeat(2047)}aa`, `${'é'.repeat(2048)}a`),
  junk,
);
// Built through JSON.parse so that "__proto__" is an own key, as a file read gives it.
const envRecord = fc
  .array(fc.tuple(envKey, envValue), { maxLength: 3 })
  .map((entries) => JSON.parse(`{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v) ?? 'null'}`).join(',')}}`) as Obj);
class NotPlain {
  A = 'x';
}
// Records no JSON gives: what zod's record makes of prototypes, hidden and symbol keys.
const envOdd = fc.constantFrom<unknown>(
  Object.assign(Object.create(null) as Obj, { A: 'x' }),
  Object.assign(Object.create({ INHERITED: 'x' }) as Obj, { A: 'y' }),
  new NotPlain(),
  Object.defineProperty({ A: 'x' }, 'B', { value: 'hidden', enumerable: false }),
  { [Symbol('s')]: 'x' },
  { A: undefined },
  new Date(0),
);
const commandEdge = fc.oneof(
  { arbitrary: fc.constantFrom<unknown>([], ['a'], Array(256).fill('a'), Array(257).fill('a'), ['a\0b'], [''], ['c'.repeat(4096)], ['c'.repeat(4097)], ['a', 1], [null], [undefined], 'a'), weight: 4 },
  fc.array(fc.oneof(fc.string({ maxLength: 3 }), junk), { minLength: 1, maxLength: 3 }),
  junk,
);
const validStart = fc.record({ command: fc.array(fc.string({ minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 3 }), env: fc.dictionary(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,6}$/), fc.string({ maxLength: 8 }), { maxKeys: 3 }) }, { requiredKeys: ['command'] }) as fc.Arbitrary<Obj>;
const start = fc.oneof(
  { arbitrary: validStart, weight: 2 },
  { arbitrary: withKey(validStart, 'command', commandEdge), weight: 3 },
  { arbitrary: withKey(validStart, 'env', fc.oneof({ arbitrary: envRecord, weight: 4 }, { arbitrary: envOdd, weight: 2 }, fc.constantFrom(undefined, null), junk)), weight: 4 },
  withKey(validStart, 'extra', junk),
  fc.constant(undefined),
  junk,
);

const httpOk = fc.constantFrom('http://127.0.0.1:8080/health', 'http://localhost/', 'http://[::1]:8080/', 'http://127.0.0.1:80/x');
const httpEdge = fc.oneof(
  fc.constantFrom(
    'http://127.0.0.1:80/x',
    'http://user@127.0.0.1/',
    'http://:pw@127.0.0.1/',
    'https://127.0.0.1/',
    'http://[::1]:8080/',
    'http://localhost',
    'http://LOCALHOST:1/',
    'http://localhost./',
    'http://127.1/',
    'http://0x7f.0.0.1/',
    'http://127.0.0.1.nip.io/',
    'http://[::ffff:127.0.0.1]/',
    'http://10.0.0.1/',
    'http://999.0.0.1/',
    'http://127.0.0.1:65536/',
    'http://127.0.0.1:0/',
    ' http://127.0.0.1/ ',
    'http:127.0.0.1',
    'http:/127.0.0.1/',
    'ftp://127.0.0.1/',
    'file:///etc/passwd',
    '127.0.0.1:80',
    '',
    `http://127.0.0.1/${'p'.repeat(2048 - 17)}`,
    `http://127.0.0.1/${'p'.repeat(2049 - 17)}`,
  ),
  junk,
);
const tcpOk = fc.constantFrom('127.0.0.1:5432', 'localhost:1', '[::1]:65535', '127.255.255.255:80');
const tcpEdge = fc.oneof(
  fc.constantFrom('127.0.0.1:0', '127.0.0.1:1', '127.0.0.1:65535', '127.0.0.1:65536', ':65536', ':80', '[::1]:80', '::1:80', 'localhost:080', '127.0.0.1:000001', '127.0.0.1:99999', '10.0.0.1:80', '127.0.0.1', 'localhost:-1', 'localhost: 80', '127.0.0.1:80\n', 'LOCALHOST:80', `localhost:${'0'.repeat(250)}80`, 'x'.repeat(257), ''),
  junk,
);
const validHealth = fc.oneof(
  fc.record({ http: httpOk, timeoutMs: fc.integer({ min: 1, max: 3_600_000 }), stableMs: fc.integer({ min: 0, max: 3_600_000 }) }, { requiredKeys: [] }),
  fc.record({ tcp: tcpOk, timeoutMs: fc.integer({ min: 1, max: 3_600_000 }), stableMs: fc.integer({ min: 0, max: 3_600_000 }) }, { requiredKeys: [] }),
) as fc.Arbitrary<Obj>;
const health = fc.oneof(
  { arbitrary: validHealth, weight: 2 },
  { arbitrary: withKey(validHealth, 'http', fc.oneof({ arbitrary: httpEdge, weight: 4 }, fc.constant(undefined))), weight: 3 },
  { arbitrary: withKey(validHealth, 'tcp', fc.oneof({ arbitrary: tcpEdge, weight: 4 }, fc.constant(undefined))), weight: 3 },
  fc.tuple(validHealth, httpOk, tcpOk).map(([h, http, tcp]) => ({ ...h, http, tcp })),
  fc.tuple(validHealth, tcpOk).map(([h, tcp]) => ({ ...h, http: undefined, tcp })),
  { arbitrary: withKey(validHealth, 'timeoutMs', fc.oneof(around(1, 3_600_000), fc.constant(undefined))), weight: 2 },
  { arbitrary: withKey(validHealth, 'stableMs', fc.oneof(around(0, 3_600_000), fc.constant(undefined))), weight: 2 },
  withKey(validHealth, 'extra', junk),
  fc.constant(undefined),
  junk,
);

const validRelease = fc.record({ name: appName, version, start: validStart, health: validHealth }, { requiredKeys: ['name', 'version'] }) as fc.Arbitrary<Obj>;
const inherited = (o: Obj): Obj => Object.assign(Object.create({ extra: 1 }) as Obj, o);
const release = fc.oneof(
  { arbitrary: validRelease, weight: 4 },
  withKey(validRelease, 'name', appNameEdge),
  withKey(validRelease, 'version', versionEdge),
  withKey(validRelease, 'start', fc.constant(undefined)),
  withKey(validRelease, 'health', fc.constant(undefined)),
  withKey(validRelease, 'extra', junk),
  withKey(validRelease, '__proto__', junk),
  validRelease.map(inherited),
  validRelease.map((o) => Object.assign(Object.create({ name: o.name }) as Obj, { ...o, name: undefined })),
  validRelease.map(({ name, ...rest }) => Object.assign(Object.create({ name }) as Obj, rest)),
  fc.jsonValue(),
);

test('checkReleaseFileShape accepts what releaseFileSchema accepts and returns what it returns', () => {
  assertSameAsSchema(checkReleaseFileShape, releaseFileSchema, both(release), { numRuns: 2000, minAccepted: 400, maxAccepted: 1600, golden: { shape: 'release-file', from: 'checkReleaseFileShape of src/core/release-check.ts' } });
});

test('checkReleaseFileShape takes start as releaseFileSchema does: command, env keys and values at their edges', () => {
  assertSameAsSchema(checkReleaseFileShape, releaseFileSchema, both(withKey(validRelease, 'start', start)), { numRuns: 4000, minAccepted: 800, maxAccepted: 3200, golden: { shape: 'release-file', from: 'checkReleaseFileShape of src/core/release-check.ts' } });
});

test('checkReleaseFileShape takes health as releaseFileSchema does: http and tcp probes, their limits and defaults', () => {
  assertSameAsSchema(checkReleaseFileShape, releaseFileSchema, both(withKey(validRelease, 'health', health)), { numRuns: 4000, minAccepted: 800, maxAccepted: 3200, golden: { shape: 'release-file', from: 'checkReleaseFileShape of src/core/release-check.ts' } });
});

// The cases the brief names, each once, so that each is known to be reached.
test('steward-release.json edge cases reach the same verdicts as releaseFileSchema', () => {
  const base = { name: 'web', version: '1.0.0' };
  const cases: unknown[] = [
    ...['http://127.0.0.1:80/x', 'http://user@127.0.0.1/', 'https://127.0.0.1/', 'http://[::1]:8080/', 'http://localhost'].map((http) => ({ ...base, health: { http } })),
    ...['127.0.0.1:0', ':65536', '[::1]:80', '127.0.0.1:65535'].map((tcp) => ({ ...base, health: { tcp } })),
    { ...base, health: { http: 'http://127.0.0.1/', tcp: '127.0.0.1:80' } },
    { ...base, start: { command: ['run'], env: JSON.parse('{"__proto__": 5, "A": "x"}') } },
    { ...base, start: { command: ['run'], env: { ['A'.repeat(128)]: 'é'.repeat(2048) } } },
    { ...base, start: { command: ['run'], env: { ['A'.repeat(129)]: 'x' } } },
    { ...base, start: { command: ['run'], env: { A: 'é'.repeat(2049) } } },
    { ...base, start: undefined, health: { http: undefined } },
  ];
  const verdicts = cases.map((c) => {
    const z = releaseFileSchema.safeParse(c);
    assert.deepEqual(checkReleaseFileShape(c), z.success ? z.data : null, JSON.stringify(c));
    return z.success;
  });
  assert.deepEqual(verdicts, [true, false, false, true, true, false, false, true, true, false, true, true, false, false, true]);
  recordGolden({ shape: 'release-file', from: 'checkReleaseFileShape of src/core/release-check.ts' }, checkReleaseFileShape, cases);
});

test('a refusal is worded by the schema', async () => {
  assert.match(await refusalOf(releaseFileChecker, { name: 'web', version: '1.0.0', health: { tcp: ':80' } }), /health\.tcp: health\.tcp must be a loopback host:port/);
  assert.match(await refusalOf(markerChecker, { schemaVersion: 1 }), /tarballIntegrity/);
});
