import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { compareVersions, isVersion, MAX_VERSION_LENGTH, VERSION_RE } from '../../src/core/version.js';
import { LAUNCHER, SHELL, writeMarker } from '../helpers/launcher-host.js';
import { checkProperty } from '../property/property-run.js';

// The launcher's checks that start no process (systemd/steward-launcher) say what their references
// say: is_version what isVersion (src/core/version.ts) says, newer what compareVersions says,
// has_line what `grep -qF` says. Each on hand-picked edges and on many generated inputs, every
// batch in one sh process (dash where installed), the functions taken from the launcher itself.

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

// Whether the launcher's newer says "a is newer than b" for each pair just when compareVersions
// does, and its path in the shell alone (newer_awk never started) says it for every pair that
// has no pre-release and no number over 18 digits.
function sameAsCompareVersions(pairs: [string, string][]): void {
  const args = pairs.flat();
  const loop = 'while [ $# -gt 0 ]; do if newer "$1" "$2"; then printf 1; else printf 0; fi; shift 2; done';
  const got = runShell(['newer', 'newer_awk'], loop, args);
  const shellOnly = runShell(['newer'], `newer_awk() { printf 'newer_awk %s %s' "$1" "$2" >&2; exit 3; }\n${loop}`, args.filter((_, i) => inShell(pairs[Math.floor(i / 2)]!)));
  const fast = pairs.filter(inShell);
  assert.equal(got.length, pairs.length);
  assert.equal(shellOnly.length, fast.length);
  pairs.forEach(([a, b], i) => assert.equal(got[i] === '1', compareVersions(a, b) > 0, `newer ${a} ${b}`));
  fast.forEach(([a, b], i) => assert.equal(shellOnly[i] === '1', compareVersions(a, b) > 0, `newer ${a} ${b} in the shell alone`));
}
const inShell = ([a, b]: [string, string]) => !`${a}${b}`.includes('-') && `${a}.${b}`.split('.').every((n) => n.length <= 18);

test('newer orders versions as compareVersions does, in the shell alone where it can', async () => {
  const edges: [string, string][] = [
    ['1.0.0', '0.9.9'], ['1.10.0', '1.9.0'], ['0.0.1', '0.0.0'], ['2.0.0', '2.0.0'], ['1.2.3', '1.2.4'], ['10.0.0', '9.99.99'],
    ['999999999999999999.0.0', '999999999999999998.0.0'], ['1000000000000000000.0.0', '999999999999999999.0.0'], ['9223372036854775808.0.0', '9223372036854775807.0.0'],
    ['12345678901234567890.0.0', '9999999999999999999.0.0'], ['0.0.99999999999999999999', '0.0.99999999999999999998'],
    ['1.0.0', '1.0.0-rc.1'], ['1.0.0-rc.10', '1.0.0-rc.2'], ['1.0.0-alpha', '1.0.0-1'], ['1.0.0-a', '1.0.0-A'], ['1.2.3-01', '1.2.3-1'],
  ];
  sameAsCompareVersions([...edges, ...edges.map(([a, b]): [string, string] => [b, a])]);
  assert.ok(edges.filter(inShell).length >= 6 && edges.filter((p) => !inShell(p)).length >= 6);
  // Numbers mostly small, so that pairs share their first ones, some long; a pre-release in
  // about a third.
  const num = fc.oneof({ weight: 6, arbitrary: fc.nat(3).map(String) }, { weight: 1, arbitrary: fc.bigInt({ min: 0n, max: 10n ** 20n }).map(String) });
  const pre = fc.oneof({ weight: 2, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom('-rc.1', '-rc.2', '-rc.10', '-alpha', '-1', '-a.b') });
  const one = fc.tuple(num, num, num, pre).map(([a, b, c, p]) => `${a}.${b}.${c}${p}`);
  const pair = fc.tuple(one, one);
  // 20 runs of up to 200 pairs, each run two sh processes.
  await checkProperty('launcher newer = compareVersions', fc.property(fc.array(pair, { minLength: 1, maxLength: 200, size: 'max' }), sameAsCompareVersions), 20);
  const sample = fc.sample(pair, { seed: 3, numRuns: 1000 });
  assert.ok(sample.filter(inShell).length > 100 && sample.filter((p) => !inShell(p)).length > 100, 'both paths are taken');
});

// Whether has_line finds `text` in each of `files` just when `grep -qF` does.
function sameAsGrep(t: TestContext, text: string, files: Buffer[]): void {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-launcher-has-line-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const names = files.map((bytes, i) => {
    const file = path.join(dir, String(i));
    writeFileSync(file, bytes);
    return file;
  });
  const got = runShell(['has_line'], 'text=$1; shift; for f in "$@"; do if has_line "$text" "$f"; then printf 1; else printf 0; fi; done', [text, ...names]);
  const grep = runShell([], 'text=$1; shift; for f in "$@"; do if grep -qF -- "$text" "$f"; then printf 1; else printf 0; fi; done', [text, ...names]);
  assert.equal(got.length, files.length);
  files.forEach((bytes, i) => assert.equal(got[i], grep[i], `has_line ${JSON.stringify(text)} in ${JSON.stringify(bytes.toString('latin1'))}`));
}

test('has_line finds the version in a marker just when grep -qF does', (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-launcher-marker-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeMarker(dir, '1.2.3-rc.1');
  const marker = readFileSync(path.join(dir, '.steward-valid'), 'latin1');
  const text = '"version": "1.2.3-rc.1"';
  const at = marker.indexOf(text);
  assert.ok(at > 0);
  const edges = [
    marker, marker.trimEnd(), text, `${text}\n`, '', '\n', marker.replace(text, `${text},`), marker.replace(text, '"version": "1.2.3-rc.10"'),
    marker.replace(text, '"version": "1.2.3-rc."'), marker.replace(text, '"version":"1.2.3-rc.1"'), marker.slice(0, at + text.length), marker.slice(0, at + text.length - 1),
    marker.replace(text, `"version": "1.2.3-\nrc.1"`), marker.replace(text, `${text}\r`), marker.replace(/\n/g, '\r\n'), `\0${text}\0\n`, `\xff\xfe${text}`, '\\'.repeat(3) + text,
  ];
  // Near markers: up to three characters inserted, replaced or removed, often in the text (no NUL
  // inside it: read drops NULs, grep does not, as the launcher's comment says).
  const near = fc
    .tuple(fc.array(fc.tuple(fc.nat(2), fc.oneof(fc.nat(), fc.integer({ min: at - 2, max: at + text.length + 2 })), fc.constantFrom('\n', '\r', ' ', '"', '\\', '1', '.', 'x', '\xff', '\0')), { maxLength: 3 }))
    .map(([edits]) => edits.reduce((s, [kind, n, ch]) => edit(s, kind, n, ch), marker))
    .filter((m) => !m.replace(/\0/g, '').includes(text) || m.includes(text));
  const files = [...edges, ...fc.sample(near, { seed: 2, numRuns: 400 })].map((s) => Buffer.from(s, 'latin1'));
  sameAsGrep(t, text, files);
  const found = files.filter((b) => b.includes(text)).length;
  assert.ok(found > 50 && files.length - found > 50, `${found} of ${files.length} hold the text`);
});
