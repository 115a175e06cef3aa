import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SELF_FILES } from '../../src/core/self-schemas.js';
import { LAUNCHER, LauncherHost, SHELL, shellParses, wrongLauncher, type Start } from '../helpers/launcher-host.js';

// Every file in self/ may hold garbage (a power cut, a disk error, a newer steward's format): none
// may stop the floor from booting, and each gets the safe choice (docs/self-update.md).

const GARBAGE: [string, (file: string) => void][] = [
  ['empty', (f) => writeFileSync(f, '')],
  ['the zeros of a lost write', (f) => writeFileSync(f, Buffer.alloc(57))],
  ['a line cut short', (f) => writeFileSync(f, '{"schemaVersion":1,"version":"1.')],
  ['random bytes', (f) => writeFileSync(f, Buffer.from('9f1c00ff22"}{\n\\$(reboot)`id`*', 'latin1'))],
  ['a newer format', (f) => writeFileSync(f, '{"schemaVersion":2,"version":"2.0.0","source":"release","starts":1}\n')],
  ['a huge file', (f) => writeFileSync(f, Buffer.alloc(1 << 20, 'x'))],
  ['a count past any limit', (f) => writeFileSync(f, '{"schemaVersion":1,"version":"1.0.0","starts":99999999999999999999}\n')],
  ['a folder', (f) => mkdirSync(path.join(f, 'inside'), { recursive: true })],
  ['a symlink', (f) => symlinkSync('/etc/hostname', f)],
  ['a FIFO', (f) => assert.equal(spawnSync('mkfifo', [f]).status, 0)],
];

// What a start runs with that file garbage, on a host whose current 1.0.0 is good and whose
// package 0.9.0 is older: the garbage is never used, and is set aside where it would be read.
const SAFE: Record<string, string> = {
  candidate: 'current 1.0.0', // set aside as reverted, unrun
  trying: 'current 1.0.0', // renamed to reverted whatever it holds
  reverted: 'current 1.0.0', // the launcher never reads it
  starts: 'current 1.0.0', // counts as none
  fallback: 'fallback 0.9.0', // meant to set something aside: the floor
  'package-tried': 'current 1.0.0', // only asked when the package is newer
};

const ran = (s: Start) => (s.run ? `${s.run.decision} ${s.run.version}` : `nothing (exit ${s.code}): ${s.stderr}`);

async function garbageNeverStopsABoot(t: TestContext, launcher: string): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-launcher-garbage-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  for (const name of SELF_FILES) {
    for (const [what, make] of GARBAGE) {
      const host = new LauncherHost(path.join(dir, String(n++)), '0.9.0');
      host.addRelease('1.0.0', 'good');
      host.setCurrent('1.0.0');
      mkdirSync(host.selfDir, { recursive: true, mode: 0o700 });
      make(path.join(host.selfDir, name));
      const first = await host.start({ launcher });
      assert.equal(ran(first), SAFE[name], `${name} holding ${what}`);
      const later = await host.starts(2, { launcher });
      for (const s of later) assert.notEqual(s.run, null, `${name} holding ${what}: a later start ran nothing: ${s.stderr}`);
    }
  }
}

test('garbage in any file of self/ never stops a boot, and each gets the safe choice', (t) => garbageNeverStopsABoot(t, LAUNCHER));

test('with no current at all, garbage in any file of self/ still boots the package', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-launcher-garbage-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  for (const name of SELF_FILES) {
    for (const [what, make] of GARBAGE) {
      const host = new LauncherHost(path.join(dir, String(n++)), '0.9.0');
      mkdirSync(host.selfDir, { recursive: true, mode: 0o700 });
      make(path.join(host.selfDir, name));
      const s = await host.start();
      assert.ok(['package 0.9.0', 'fallback 0.9.0'].includes(ran(s)), `${name} holding ${what}: ${ran(s)}`);
    }
  }
});

test('garbage in package-tried gives a newer package its trial once, and then it is remembered', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-launcher-garbage-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const host = new LauncherHost(dir, '1.1.0', 'exit');
  host.addRelease('1.0.0', 'good');
  host.setCurrent('1.0.0');
  host.writeSelf('package-tried', '{"schemaVersion":1,"version":"1.1.');
  assert.deepEqual((await host.starts(4)).map(ran), ['trial 1.1.0', 'current 1.0.0', 'current 1.0.0', 'current 1.0.0']);
});

// A temp file of the launcher's write_state that an earlier start with the same pid left, made by a
// wrapper that execs the launcher (same pid) right after. It is removed before the write: nothing
// is written through it, the start is counted, and a FIFO does not block the start.
const STALE_TMP: [string, string][] = [
  ['a FIFO', 'mkfifo "$tmp"'],
  ['a symlink to a file', 'ln -s "$OUTSIDE" "$tmp"'],
  ['a symlink to nothing yet', 'ln -s "$OUTSIDE.new" "$tmp"'],
  ["another file's hard link", 'ln "$OUTSIDE" "$tmp"'],
];

async function staleTempFilesAreRemoved(t: TestContext, launcher: string, cases: [string, string][]): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-launcher-stale-tmp-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  for (const [what, make] of cases) {
    const host = new LauncherHost(path.join(dir, String(n++)), '0.9.0');
    host.addRelease('1.0.0', 'exit');
    host.setCurrent('1.0.0');
    mkdirSync(host.selfDir, { recursive: true, mode: 0o700 });
    const outside = path.join(host.base, 'outside');
    writeFileSync(outside, 'not the launcher\'s\n');
    const wrapper = path.join(host.base, 'stale-tmp-then-launcher');
    writeFileSync(wrapper, `tmp=${host.selfDir}/.starts.$$.tmp\nOUTSIDE=${outside}\n${make}\nexec ${SHELL} ${launcher} "$@"\n`);
    const s = await host.start({ launcher: wrapper });
    assert.equal(ran(s), 'current 1.0.0', what);
    assert.equal(host.readSelf('starts'), '{"schemaVersion":1,"version":"1.0.0","starts":1}\n', what);
    assert.ok(lstatSync(path.join(host.selfDir, 'starts')).isFile(), `${what}: starts is a file of its own`);
    assert.equal(readFileSync(outside, 'utf8'), 'not the launcher\'s\n', `${what}: nothing was written through it`);
    assert.ok(!existsSync(`${outside}.new`), `${what}: nothing was made through it`);
    assert.deepEqual(readdirSync(host.selfDir), ['starts'], what);
  }
}

test('a temp file an earlier start with the same pid left is removed before the write', (t) => staleTempFilesAreRemoved(t, LAUNCHER, STALE_TMP));

test('a launcher that writes its temp file over what is there is caught by the stale temp file check', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-launcher-wrong-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const launcher = wrongLauncher(dir, 'no-tmp-rm', [[/\n {4}\{ ! exists "\.\$1\.\$\$\.tmp" \|\| rm -f -- "\$tmp"; \} &&/, '']]);
  assert.ok(shellParses(launcher));
  // Not the FIFO: that launcher would block on it for good.
  for (const c of STALE_TMP.slice(1)) await assert.rejects(staleTempFilesAreRemoved(t, launcher, [c]), assert.AssertionError, c[0]);
});

test('a launcher that trusts the start count it reads is caught by the garbage check', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-launcher-wrong-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // The obvious way to read a number in sh, unchecked: a garbage count ends the script under set -e.
  const launcher = wrongLauncher(dir, 'trusting-count', [
    ['  if read_record "$self/starts" && [ "$rec_version" = "$cur" ]; then count=$rec_starts; fi', '  if [ -f "$self/starts" ]; then count=$(sed \'s/.*"starts"://; s/}//\' "$self/starts"); fi'],
  ]);
  assert.ok(shellParses(launcher));
  await assert.rejects(garbageNeverStopsABoot(t, launcher), assert.AssertionError);
});
