import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LAUNCHER, LauncherHost, wrongLauncher, type Run } from '../helpers/launcher-host.js';
import { LATER_STARTS, SCENARIOS, violations, type Scenario } from '../helpers/launcher-scenarios.js';

// A SIGKILL of the launcher before and after each of its renames and fsyncs (every `mv` and
// `sync` it runs), in each scenario: from every state that leaves, over the starts that follow,
// the version on trial runs at most once, every start boots, and one version settles as current.
// (Power cuts, which may also undo a rename that was not fsynced, are test/crash/explore-self-launcher.)

// `mv` and `sync` for the launcher: the call numbered $KILL_AT SIGKILLs the launcher ($PPID),
// before or after doing what it was asked. Calls are counted in $KILL_COUNT.
function killingBin(dir: string): string {
  const bin = path.join(dir, 'killing-bin');
  mkdirSync(bin, { recursive: true });
  for (const cmd of ['mv', 'sync']) {
    const real = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).stdout.trim();
    writeFileSync(
      path.join(bin, cmd),
      `#!/bin/sh
[ -n "\${KILL_AT:-}" ] || exec ${real} "$@"
read -r n <"$KILL_COUNT"
n=$((n + 1))
echo "$n" >"$KILL_COUNT"
if [ "$n" = "$KILL_AT" ] && [ "$KILL_WHEN" = before ]; then kill -9 "$PPID"; exit 1; fi
rc=0
${real} "$@" || rc=$?
if [ "$n" = "$KILL_AT" ]; then kill -9 "$PPID"; fi
exit "$rc"
`,
      { mode: 0o755 },
    );
  }
  return bin;
}

// The starts a kill may cut: the trial's, its revert's or commit's, and the counting ones after.
const CUT_STARTS = 3;

// `enough`, when given, ends the cuts at the first problem it accepts (a mutation test needs one).
async function killedAtEveryStep(t: TestContext, s: Scenario, launcher: string, enough?: (problem: string) => boolean): Promise<{ cuts: number; problems: string[] }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-launcher-kill-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const bin = killingBin(dir);
  const count = path.join(dir, 'count');
  const killEnv = (at: number, when: string) => ({ PATH: `${bin}:${process.env.PATH}`, KILL_AT: String(at), KILL_WHEN: when, KILL_COUNT: count });
  // Starts that are not cut, to count their calls.
  const dry = new LauncherHost(path.join(dir, 'dry'), s.pkg, s.pkgBehaviour);
  await s.setup(dry);
  writeFileSync(count, '0');
  for (let i = 0; i < CUT_STARTS; i++) await dry.start({ launcher, env: killEnv(0, 'never') });
  const calls = Number(readFileSync(count, 'utf8'));
  assert.ok(calls > 0, `${s.name}: the launcher ran no mv or sync`);
  const problems: string[] = [];
  let n = 0;
  for (let at = 1; at <= calls; at++) {
    for (const when of ['before', 'after']) {
      const h = new LauncherHost(path.join(dir, String(n++)), s.pkg, s.pkgBehaviour);
      await s.setup(h);
      writeFileSync(count, '0');
      const cut: Run[] = [];
      let killed = false;
      for (let i = 0; i < CUT_STARTS && !killed; i++) {
        const st = await h.start({ launcher, env: killEnv(at, when) });
        if (st.run) cut.push(st.run);
        killed = st.signal === 'SIGKILL';
      }
      const where = `killed ${when} mv/sync call ${at} of ${calls}`;
      if (!killed) problems.push(`${where}: the launcher was not killed`);
      const later = await h.starts(LATER_STARTS, { launcher, untilFixed: true });
      for (const p of violations(s, h, cut, later)) problems.push(`${where}: ${p}`);
      rmSync(h.base, { recursive: true, force: true });
      if (enough && problems.some(enough)) return { cuts: n, problems };
    }
  }
  return { cuts: n, problems };
}

for (const s of SCENARIOS) {
  test(`${s.name}: a kill -9 of the launcher before or after any rename or fsync runs the trial at most once and settles on one version`, async (t) => {
    const r = await killedAtEveryStep(t, s, LAUNCHER);
    assert.ok(r.cuts >= 2);
    assert.deepEqual(r.problems, []);
  });
}

// The later starts stop at a fixed point (LauncherHost.starts, untilFixed): from each scenario's
// start, uncut, they give what as many real starts give.
test('the later starts cut short at a fixed point give what the real starts give', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-launcher-fixed-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const seen = (starts: Array<{ code: number | null; run: Run | null }>) => starts.map((st) => `${st.code} ${st.run ? `${st.run.decision} ${st.run.version} ${st.run.tree}` : 'nothing'}`);
  let cut = 0;
  for (const s of SCENARIOS) {
    const [real, fixed] = [new LauncherHost(path.join(dir, `${s.name}-real`), s.pkg, s.pkgBehaviour), new LauncherHost(path.join(dir, `${s.name}-fixed`), s.pkg, s.pkgBehaviour)];
    await s.setup(real);
    await s.setup(fixed);
    const shortened = await fixed.starts(LATER_STARTS + 1, { untilFixed: true });
    assert.deepEqual(seen(shortened), seen(await real.starts(LATER_STARTS + 1)), s.name);
    if (fixed.runs().length < LATER_STARTS + 1) cut++;
  }
  assert.ok(cut > 0, 'some scenario reached a fixed point before its last start');
});

test('a launcher that remembers a package version only once it is reverted is caught by the kill test', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-launcher-kill-wrong-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // Fine while nothing is cut; a kill between the revert and the write of package-tried lets
  // the package version run on trial a second time.
  const launcher = wrongLauncher(dir, 'remember-late', [
    ['  if [ "$ptr_source" = package ]; then\n    tried_line', '  if false; then\n    tried_line'],
    [
      '      say "the last trial did not commit: $self/trying renamed to reverted"\n',
      '      say "the last trial did not commit: $self/trying renamed to reverted"\n      if read_pointer "$self/reverted" && [ "$ptr_source" = package ]; then tried_line "$ptr_version"; write_state package-tried "$line"; fi\n',
    ],
  ]);
  const s = SCENARIOS.find((x) => x.name === 'a newer package version that exits at start')!;
  const ranTwice = (p: string) => p.includes('package (trial) ran 2 times');
  const r = await killedAtEveryStep(t, s, launcher, ranTwice);
  assert.ok(r.problems.some(ranTwice), r.problems.join('\n'));
});
