import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { isVersion, MAX_VERSION_LENGTH, VERSION_RE } from '../../src/core/version.js';
import { LAUNCHER, SHELL } from '../helpers/launcher-host.js';
import { checkProperty } from '../property/property-run.js';

// The launcher's checks that start no process (systemd/steward-launcher) say what their references
// say: is_version what isVersion (src/core/version.ts) says. On hand-picked edges and on many
// generated inputs, every batch in one sh process (dash where installed), the functions taken from
// the launcher itself.

// The text of the launcher's function `name`.
function launcherFunction(name: string): string {
  const fn = new RegExp(`^${name}\\(\\) \\{\\n[\\s\\S]*?^\\}\\n`, 'm').exec(readFileSync(LAUNCHER, 'utf8'))?.[0];
  assert.ok(fn, `${name}() is in the launcher`);
  return fn;
}

// Runs `body` after the launcher's `functions`, with `args` as "$@"; its output.
function runShell(functions: string[], body: string, args: string[]): string {
  const script = `set -eu\nset -f\n${functions.map(launcherFunction).join('')}${body}\n`;
  const r = spawnSync(SHELL, ['-c', script, 'sh', ...args], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

// Whether the launcher's is_version accepts each of `values` (no NUL: an argument cannot hold one).
function sameAsIsVersion(values: string[]): void {
  const got = runShell(['is_version'], 'for v in "$@"; do if is_version "$v"; then printf 1; else printf 0; fi; done', values);
  assert.equal(got.length, values.length);
  values.forEach((v, i) => assert.equal(got[i] === '1', isVersion(v), `is_version ${JSON.stringify(v)}`));
}

const pad = (v: string, length: number) => v + (v.includes('-') ? '' : '-') + 'x'.repeat(Math.max(0, length - v.length - (v.includes('-') ? 0 : 1)));

test('is_version agrees with isVersion on the edges of the pattern', () => {
  const edges = [
    ...['0.0.0', '1.2.3', '10.20.30', '12345678901234567890.0.0', '1.2.3-0', '1.2.3-rc.1', '1.2.3-a-b', '1.2.3--', '1.2.3-.', '1.2.3-a..b', '1.2.3-01'],
    ...['', '1', '1.2', '1.2.3.4', '1..3', '.1.2.3', '1.2.3.', '01.2.3', '1.02.3', '1.2.03', '00.0.0', '1.2.3-', '-1.2.3', '1.2-3.4', '1.2.3+b', '1.2.3-a+b', 'a.b.c'],
    ...['1.2.3 ', ' 1.2.3', '1.2.3\n', '1.2.3\n4.5.6', '1.2.3-é', '１.2.3', '1.2.3-a/b', '../1.2.3', '1.2.3-$(id)', '1.2.3-*', '*.*.*', '[0-9].0.0'],
    ...[MAX_VERSION_LENGTH - 1, MAX_VERSION_LENGTH, MAX_VERSION_LENGTH + 1].map((n) => pad('1.2.3', n)),
  ];
  sameAsIsVersion(edges);
  assert.ok(edges.filter(isVersion).length >= 10 && edges.filter((v) => !isVersion(v)).length >= 20);
});

const digits = fc.string({ unit: fc.constantFrom(...'0123456789'), maxLength: 4 });
const number = fc.oneof(fc.constantFrom('0', '1', '9', '10', '00', '01', '007', ''), fc.bigInt({ min: 0n, max: 10n ** 25n }).map(String), digits);
const preRelease = fc.string({ unit: fc.constantFrom(...'0123456789azAZ.-'), maxLength: 12 });
const version = fc
  .tuple(number, number, number, fc.option(preRelease), fc.option(fc.integer({ min: MAX_VERSION_LENGTH - 4, max: MAX_VERSION_LENGTH + 4 }), { freq: 4 }))
  .map(([a, b, c, pre, length]) => {
    const v = `${a}.${b}.${c}${pre === null ? '' : `-${pre}`}`;
    return length === null ? v : pad(v, length);
  });
// `text` with one character inserted at, put in place of, or removed from a position `n` picks.
const edit = (text: string, kind: number, n: number, ch: string) => {
  const at = n % (text.length + 1);
  return kind === 0 ? text.slice(0, at) + ch + text.slice(at) : kind === 1 ? text.slice(0, at) + ch + text.slice(at + 1) : text.slice(0, at) + text.slice(at + 1);
};
const edited = fc
  .tuple(version, fc.nat(2), fc.nat(), fc.constantFrom('.', '-', '+', '0', '1', 'a', ' ', '\n', '\t', '/', '_', '*', '?', '[', 'é', '１'))
  .map(([v, kind, n, ch]) => edit(v, kind, n, ch));
const noise = fc.oneof(fc.string({ unit: fc.constantFrom(...'0129.-aZ+ \n/é'), maxLength: 16 }), fc.string({ maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 8 }));
const candidate = fc.oneof({ arbitrary: version, weight: 3 }, { arbitrary: edited, weight: 3 }, { arbitrary: noise, weight: 1 }).filter((v) => !v.includes('\0'));

test('is_version agrees with isVersion on generated versions, near versions and noise', async () => {
  // 20 runs of up to 400 strings, each run one sh process; a failure shrinks to the one string.
  await checkProperty('launcher is_version = isVersion', fc.property(fc.array(candidate, { minLength: 1, maxLength: 400, size: 'max' }), sameAsIsVersion), 20);
  // The generator makes both kinds, and not only trivially: long valid ones, invalid ones near them.
  const sample = fc.sample(candidate, { seed: 1, numRuns: 2000 });
  const valid = sample.filter(isVersion);
  assert.ok(valid.length > 300 && sample.length - valid.length > 300, `${valid.length} of ${sample.length} valid`);
  assert.ok(valid.some((v) => v.length === MAX_VERSION_LENGTH) && sample.some((v) => v.length === MAX_VERSION_LENGTH + 1 && VERSION_RE.test(v)));
});
