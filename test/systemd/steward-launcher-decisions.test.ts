import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { compareVersions } from '../../src/core/version.js';
import { writeCandidate } from '../../src/helper/self/trial-steps.js';
import { readSelfFiles } from '../../src/helper/self/self-files.js';
import { LauncherHost, LAUNCHER, SHELL, shellParses, wrongLauncher, type Behaviour, type Start } from '../helpers/launcher-host.js';
import { mulberry32 } from '../helpers/prng.js';

// The launcher's decisions (docs/design.md §14, docs/self-update.md), one start at a time, each a real
// sh process (dash where installed) exec'ing a fake runtime that records what it ran.

function base(t: TestContext): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-launcher-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// A host whose current is `current` (with that behaviour) and whose package is `pkg`.
function hostWith(t: TestContext, pkg: string, current?: [string, Behaviour], pkgBehaviour: Behaviour = 'good'): LauncherHost {
  const h = new LauncherHost(base(t), pkg, pkgBehaviour);
  if (current) {
    h.addRelease(current[0], current[1]);
    h.setCurrent(current[0]);
  }
  return h;
}

const ran = (s: Start) => (s.run ? `${s.run.decision} ${s.run.version} ${s.run.tree}` : `nothing (exit ${s.code}): ${s.stderr}`);

test('the launcher is POSIX sh that dash parses', () => {
  assert.ok(shellParses(LAUNCHER), `${SHELL} -n ${LAUNCHER}`);
  assert.equal(statSync(LAUNCHER).mode & 0o755, 0o755, 'the launcher is executable');
});

test("with no current and no trial, the package's version runs as the floor, and self/ is made 0700", async (t) => {
  const h = hostWith(t, '1.0.0');
  const s = await h.start();
  assert.equal(ran(s), 'package 1.0.0 package');
  assert.equal(statSync(h.selfDir).mode & 0o777, 0o700);
});

// Each check below takes the launcher to run, so that a deliberately wrong one can be shown
// to fail it (the last test).
async function candidateRunsOnce(t: TestContext, launcher: string): Promise<void> {
  const h = hostWith(t, '0.9.0', ['1.0.0', 'good']);
  h.addRelease('2.0.0', 'exit');
  await writeCandidate(h.paths, '2.0.0');
  const first = await h.start({ launcher });
  assert.equal(ran(first), 'trial 2.0.0 versions/2.0.0');
  assert.equal(h.readSelf('candidate'), null, 'the candidate is gone before it ran');
  assert.equal(h.readSelf('trying'), '{"schemaVersion":1,"version":"2.0.0","source":"release"}\n');
  const later = await h.starts(4, { launcher });
  assert.deepEqual(later.map(ran), Array(4).fill('current 1.0.0 versions/1.0.0'));
  assert.equal(h.readSelf('trying'), null);
  assert.equal(h.readSelf('reverted'), '{"schemaVersion":1,"version":"2.0.0","source":"release"}\n');
  assert.equal(h.current(), 'versions/1.0.0');
}

test('a candidate is renamed to trying before it runs, and runs once: the next start reverts it and runs current', (t) => candidateRunsOnce(t, LAUNCHER));

test('a good candidate commits: current points at it, trying is gone, and every later start runs it as current', async (t) => {
  const h = hostWith(t, '0.9.0', ['1.0.0', 'good']);
  h.addRelease('2.0.0', 'good');
  await writeCandidate(h.paths, '2.0.0');
  assert.equal(ran(await h.start()), 'trial 2.0.0 versions/2.0.0');
  assert.equal(h.current(), 'versions/2.0.0');
  assert.equal(h.readSelf('trying'), null);
  assert.deepEqual((await h.starts(4)).map(ran), Array(4).fill('current 2.0.0 versions/2.0.0'));
});

async function unreadyCurrentSetAside(t: TestContext, launcher: string): Promise<void> {
  const h = hostWith(t, '0.9.0', ['1.0.0', 'exit']);
  const s = await h.starts(6, { launcher });
  assert.deepEqual(s.map(ran), [...Array(3).fill('current 1.0.0 versions/1.0.0'), ...Array(3).fill('fallback 0.9.0 package')]);
  assert.equal(h.readSelf('fallback'), '{"schemaVersion":1,"version":"1.0.0","starts":3}\n');
  assert.match(s[3]!.stderr, /steward 1\.0\.0 started 3 times in a row without getting ready: set aside/);
}

test('a current that never gets ready runs 3 times in a row, then is set aside: the package runs as fallback on every later start', (t) => unreadyCurrentSetAside(t, LAUNCHER));

test('a current whose start count is reset once it is ready is never set aside', async (t) => {
  const h = hostWith(t, '0.9.0', ['1.0.0', 'good']);
  assert.deepEqual((await h.starts(6)).map(ran), Array(6).fill('current 1.0.0 versions/1.0.0'));
  assert.equal(h.readSelf('fallback'), null);
});

test("a start count or a fallback that names another version is not current's", async (t) => {
  const h = hostWith(t, '0.9.0', ['1.0.0', 'exit']);
  h.writeSelf('starts', '{"schemaVersion":1,"version":"0.5.0","starts":3}\n');
  h.writeSelf('fallback', '{"schemaVersion":1,"version":"0.5.0","starts":3}\n');
  assert.equal(ran(await h.start()), 'current 1.0.0 versions/1.0.0');
  assert.equal(h.readSelf('starts'), '{"schemaVersion":1,"version":"1.0.0","starts":1}\n');
});

async function packageTriedOnce(t: TestContext, launcher: string): Promise<void> {
  const h = hostWith(t, '1.1.0', ['1.0.0', 'good'], 'exit');
  const first = await h.start({ launcher });
  assert.equal(ran(first), 'trial 1.1.0 package');
  assert.equal(h.readSelf('trying'), '{"schemaVersion":1,"version":"1.1.0","source":"package"}\n');
  assert.equal(h.readSelf('package-tried'), '{"schemaVersion":1,"version":"1.1.0"}\n');
  assert.deepEqual((await h.starts(5, { launcher })).map(ran), Array(5).fill('current 1.0.0 versions/1.0.0'));
  assert.equal(h.readSelf('reverted'), '{"schemaVersion":1,"version":"1.1.0","source":"package"}\n');
}

test('a package version newer than current is tried once: after its revert, current runs on every later start', (t) => packageTriedOnce(t, LAUNCHER));

test('a newer package version that passes its trial becomes current, from its tree staged into versions/', async (t) => {
  const h = hostWith(t, '1.1.0', ['1.0.0', 'good'], 'good');
  assert.equal(ran(await h.start()), 'trial 1.1.0 package');
  assert.equal(h.current(), 'versions/1.1.0');
  assert.deepEqual((await h.starts(3)).map(ran), Array(3).fill('current 1.1.0 versions/1.1.0'));
});

test('a later package upgrade gets a trial of its own', async (t) => {
  const b = base(t);
  const h = new LauncherHost(b, '1.1.0', 'exit');
  h.addRelease('1.0.0', 'good');
  h.setCurrent('1.0.0');
  await h.starts(2);
  const upgraded = new LauncherHost(b, '1.2.0', 'exit');
  assert.deepEqual((await upgraded.starts(3)).map(ran), ['trial 1.2.0 package', 'current 1.0.0 versions/1.0.0', 'current 1.0.0 versions/1.0.0']);
});

test('a package version older than or equal to current leaves current running, without a trial', async (t) => {
  for (const pkg of ['0.9.0', '1.0.0', '1.0.0-rc.1']) {
    const h = hostWith(t, pkg, ['1.0.0', 'good']);
    assert.equal(ran(await h.start()), 'current 1.0.0 versions/1.0.0', `package ${pkg}`);
    assert.equal(h.readSelf('package-tried'), null);
  }
});

test('a current that does not look whole is not run: the package is', async (t) => {
  const cases: [string, (h: LauncherHost) => void][] = [
    ['no marker', (h) => h.addRelease('1.0.0', 'good', { marker: false })],
    ['a marker naming another version', (h) => {
      h.addRelease('1.0.0', 'good', { marker: false });
      writeFileSync(path.join(h.appDir, 'versions/1.0.0/.steward-valid'), '{\n  "version": "1.0.1"\n}\n');
    }],
    ['no helper program', (h) => rmSync(path.join(h.addRelease('1.0.0', 'good'), 'bin/steward-helper.js'))],
    ['current not under versions/', (h) => {
      h.addRelease('1.0.0', 'good');
      rmSync(path.join(h.appDir, 'current'), { force: true });
      writeFileSync(path.join(h.appDir, 'current'), 'versions/1.0.0');
    }],
  ];
  for (const [what, make] of cases) {
    const h = hostWith(t, '0.9.0');
    make(h);
    if (what !== 'current not under versions/') h.setCurrent('1.0.0');
    assert.equal(ran(await h.start()), 'package 0.9.0 package', what);
  }
});

test('a candidate that cannot run is set aside as reverted without running, and current runs', async (t) => {
  const cases: [string, (h: LauncherHost) => void][] = [
    ['its tree is gone', (h) => h.writeSelf('candidate', '{"schemaVersion":1,"version":"2.0.0","source":"release"}\n')],
    ['its tree has no marker', (h) => {
      h.addRelease('2.0.0', 'good', { marker: false });
      h.writeSelf('candidate', '{"schemaVersion":1,"version":"2.0.0","source":"release"}\n');
    }],
    ['a package version that is not the installed package', (h) => h.writeSelf('candidate', '{"schemaVersion":1,"version":"0.8.0","source":"package"}\n')],
  ];
  for (const [what, make] of cases) {
    const h = hostWith(t, '0.9.0', ['1.0.0', 'good']);
    make(h);
    assert.equal(ran(await h.start()), 'current 1.0.0 versions/1.0.0', what);
    assert.equal(h.readSelf('candidate'), null, what);
    assert.notEqual(h.readSelf('reverted'), null, what);
    assert.deepEqual(h.runs().map((r) => r.decision), ['current'], `${what}: nothing ran on trial`);
  }
});

test('the newer of current and the package is chosen by semver precedence, as compareVersions orders them', async (t) => {
  const pairs: [string, string][] = [
    ['1.0.0', '0.9.9'], ['1.10.0', '1.9.0'], ['1.0.0', '1.0.0-rc.1'], ['1.0.0-rc.10', '1.0.0-rc.2'],
    ['1.0.0-alpha', '1.0.0-1'], ['1.0.0-alpha.1', '1.0.0-alpha'], ['1.0.0-a.b', '1.0.0-a.1'],
    ['12345678901234567890.0.0', '9999999999999999999.0.0'], ['10.0.0', '2.0.0'], ['0.0.1', '0.0.0'],
    ['1.0.0-a', '1.0.0-A'], ['1.0.0-0.3.7.0', '1.0.0-0.3.7'], ['1.0.0-x-y', '1.0.0-x'], ['1.2.3-01', '1.2.3-1'],
  ];
  const rnd = mulberry32(19);
  const part = () => String(Math.floor(rnd() * 3));
  const pre = () => (rnd() < 0.5 ? '' : `-${['rc', 'alpha', '1', '10', 'rc.1', 'rc.a'][Math.floor(rnd() * 6)]}`);
  for (let i = 0; i < 12; i++) pairs.push([`${part()}.${part()}.${part()}${pre()}`, `${part()}.${part()}.${part()}${pre()}`]);
  for (const [a, b] of pairs) {
    for (const [pkg, cur] of [[a, b], [b, a]] as const) {
      const h = hostWith(t, pkg, [cur, 'good'], 'exit');
      const want = compareVersions(pkg, cur) > 0 ? `trial ${pkg} package` : `current ${cur} versions/${cur}`;
      assert.equal(ran(await h.start()), want, `package ${pkg}, current ${cur}`);
    }
  }
});

test('the launcher passes its arguments, --root and the node flags on, and tells the helper what it decided', async (t) => {
  const h = hostWith(t, '1.0.0');
  const s = await h.start({ args: ['--config', '/etc/x y.json'] });
  assert.equal(s.run?.args, `--root ${h.root} --config /etc/x y.json`);
  const argv = path.join(h.base, 'argv');
  writeFileSync(h.node, `#!/bin/sh\nfor a in "$@"; do printf '%s\\n' "$a"; done >"${argv}"\nenv | grep '^STEWARD_\\(SELF_\\|PACKAGE_VERSION=\\)' | sort >>"${argv}"\n`);
  await h.start({ env: { STEWARD_NODE_FLAGS: '--a  --b', STEWARD_LAUNCHER_ROOT: '' } });
  assert.equal(
    readFileSync(argv, 'utf8'),
    `--a\n--b\n${h.packageDir}/bin/steward-helper.js\nSTEWARD_PACKAGE_VERSION=1.0.0\nSTEWARD_SELF_DECISION=package\nSTEWARD_SELF_VERSION=1.0.0\n`,
  );
});

test('the package folder defaults to the one above the launcher, whose name is its version', async (t) => {
  const h = hostWith(t, '1.0.0');
  const dir = path.join(h.packageDir, 'systemd');
  mkdirSync(dir);
  const copy = path.join(dir, 'steward-launcher');
  copyFileSync(LAUNCHER, copy);
  const s = await h.start({ launcher: copy, env: { STEWARD_PACKAGE_DIR: '' } });
  assert.equal(ran(s), 'package 1.0.0 package');
});

test('when self/ cannot be written, the floor boots and no candidate runs', async (t) => {
  // A `sync` that fails: no rename or write can be made durable.
  const h = hostWith(t, '0.9.0', ['1.0.0', 'good']);
  h.addRelease('2.0.0', 'good');
  await writeCandidate(h.paths, '2.0.0');
  const bin = path.join(h.base, 'failing-bin');
  mkdirSync(bin);
  writeFileSync(path.join(bin, 'sync'), '#!/bin/sh\necho "sync: EIO" >&2\nexit 1\n', { mode: 0o755 });
  const failing = { PATH: `${bin}:${process.env.PATH}` };
  for (let i = 0; i < 3; i++) {
    const s = await h.start({ env: failing });
    assert.equal(ran(s), 'package 0.9.0 package', `start ${i + 1}`);
  }
  // And a self/ that cannot be made (its parent is a file).
  const g = hostWith(t, '0.9.0', ['1.0.0', 'good']);
  rmSync(path.join(g.root, 'var/lib/steward'), { recursive: true });
  writeFileSync(path.join(g.root, 'var/lib/steward'), 'not a folder');
  assert.equal(ran(await g.start()), 'package 0.9.0 package');
  assert.ok(!h.runs().some((r) => r.version === '2.0.0'), 'the candidate never ran');
});

test('after a fallback, a new candidate gets its trial, and its commit clears the fallback', async (t) => {
  const h = hostWith(t, '0.9.0', ['1.0.0', 'exit']);
  await h.starts(4);
  assert.notEqual(h.readSelf('fallback'), null);
  h.addRelease('2.0.0', 'good');
  await writeCandidate(h.paths, '2.0.0');
  assert.equal(ran(await h.start()), 'trial 2.0.0 versions/2.0.0');
  assert.equal(h.readSelf('fallback'), null);
  assert.deepEqual((await h.starts(2)).map(ran), Array(2).fill('current 2.0.0 versions/2.0.0'));
});

test('the files the launcher writes read valid to the helper, and it runs the candidate the helper writes', async (t) => {
  const h = hostWith(t, '1.1.0', ['1.0.0', 'exit'], 'exit');
  await h.starts(5); // package trial, revert, then current 3 times set aside
  const files = await readSelfFiles(h.paths);
  assert.deepEqual(files.reverted, { state: 'valid', value: { schemaVersion: 1, version: '1.1.0', source: 'package' } });
  assert.deepEqual(files.packageTried, { state: 'valid', value: { schemaVersion: 1, version: '1.1.0' } });
  assert.deepEqual(files.starts, { state: 'valid', value: { schemaVersion: 1, version: '1.0.0', starts: 3 } });
  assert.deepEqual(files.fallback, { state: 'valid', value: { schemaVersion: 1, version: '1.0.0', starts: 3 } });
  h.addRelease('2.0.0', 'exit');
  await writeCandidate(h.paths, '2.0.0');
  assert.equal(ran(await h.start()), 'trial 2.0.0 versions/2.0.0');
  assert.deepEqual((await readSelfFiles(h.paths)).trying, { state: 'valid', value: { schemaVersion: 1, version: '2.0.0', source: 'release' } });
});

test('each deliberately wrong launcher fails the check about it', async (t) => {
  const dir = base(t);
  const wrong: [string, [string | RegExp, string][], (t: TestContext, launcher: string) => Promise<void>][] = [
    ['runs the candidate without renaming it first', [['if rename_state candidate trying; then', 'if true; then']], candidateRunsOnce],
    ['retries what was on trial instead of running current', [[/(if rename_state trying reverted; then\n.*\n)\s*run_current/, '$1      read_pointer "$self/reverted"; candidate_dir; use "$dir" "$ptr_version" trial']], candidateRunsOnce],
    ['counts no starts', [['if [ "$count" -ge "$max_starts" ]; then', 'if false; then']], unreadyCurrentSetAside],
    ['does not remember the package version it tried', [[' && ! package_tried; then', '; then']], packageTriedOnce],
  ];
  for (const [name, edits, check] of wrong) {
    const launcher = wrongLauncher(dir, name.replace(/\W+/g, '-'), edits);
    assert.ok(shellParses(launcher), name);
    await assert.rejects(check(t, launcher), assert.AssertionError, `a launcher that ${name} passed`);
  }
});
