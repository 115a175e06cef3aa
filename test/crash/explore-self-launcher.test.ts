import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LAUNCHER, LauncherHost, parseRuns, SHELL, wrongLauncher } from '../helpers/launcher-host.js';
import { LATER_STARTS, SCENARIOS, violations, type Scenario } from '../helpers/launcher-scenarios.js';
import { mulberry32 } from '../helpers/prng.js';
import { generateCrashStates } from './crash-states.js';
import { describeState, materialize, recordOps, snapshotRoot, spawnTraced, stateWorkDir, waitExit } from './explorer.js';
import { writeTree } from './fs-model.js';
import { crashCap, crashSeed, mutationCap, requireStrace } from './settings.js';

// Power cuts during the launcher's starts (docs/design.md §14.4): three starts in a row (the trial, its
// revert or commit, a start after) run under strace; every state a power cut could leave, with
// and without each rename's folder fsync having reached the disk (crash-states.ts), is written
// out and started LATER_STARTS more times. From each: the version on trial ran at most once in
// all (counting the execs made before the cut), every start booted, one version settled.

const TRACED_STARTS = 3;

// `enough`, when given, ends the exploration at the first problem it accepts: a mutation test
// has shown what it must once the violation it expects is met.
async function explorePowerCuts(t: TestContext, s: Scenario, launcher: string, cap: number, enough?: (problem: string) => boolean): Promise<{ checked: number; problems: string[] }> {
  const base = mkdtempSync(path.join(os.tmpdir(), 'steward-crash-launcher-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const traced = new LauncherHost(path.join(base, 'traced'), s.pkg, s.pkgBehaviour);
  await s.setup(traced);
  // Each exec leaves a mark ran/<n> in the root: a cut after its creation came after the exec.
  const marks = path.join(traced.root, 'ran');
  mkdirSync(marks);
  const snapshot = await snapshotRoot(traced.root);
  const traceFile = path.join(base, 'launcher.strace');
  const loop = `for i in $(seq ${TRACED_STARTS}); do "$0" "$1" || true; done`;
  const child = spawnTraced([SHELL, '-c', loop, SHELL, launcher], traceFile, traced.env({ FAKE_MARK: marks }));
  await waitExit(child);
  assert.equal(child.exitCode, 0, 'the traced starts ran');
  const runs = parseRuns(readFileSync(traced.log, 'utf8'), traced);
  assert.equal(runs.length, TRACED_STARTS, 'each traced start exec\'d');
  const rec = recordOps(traceFile, traced.root, snapshot);
  const markAt = runs.map((_, i) => rec.ops.findIndex((o) => o.k === 'creat' && o.path.endsWith(`ran/${i + 1}`)));
  assert.ok(markAt.every((i) => i >= 0), 'every exec left its mark in the trace');

  const seed = crashSeed();
  const gen = generateCrashStates(rec.ops, { cap, seed, rng: mulberry32(seed) });
  const distinct = new Map<string, { model: ReturnType<typeof materialize>; cut: number; how: string }>();
  for (const state of gen.states) {
    const model = materialize(rec.snapshot, rec.ops, state);
    const cut = markAt.filter((i) => i < state.crashAt).length;
    const key = `${model.digest()} ${cut}`;
    if (!distinct.has(key)) distinct.set(key, { model, cut, how: describeState(rec.ops, state) });
  }
  const work = await stateWorkDir(base);
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const problems: string[] = [];
  let n = 0;
  for (const { model, cut, how } of distinct.values()) {
    const stateBase = path.join(work, `s${n++}`);
    mkdirSync(stateBase);
    await writeTree(model, path.join(stateBase, 'root'));
    rmSync(path.join(stateBase, 'root/ran'), { recursive: true, force: true });
    const h = new LauncherHost(stateBase, s.pkg, s.pkgBehaviour);
    const later = await h.starts(LATER_STARTS, { launcher, untilFixed: true });
    const bad = violations(s, h, runs.slice(0, cut), later);
    if (bad.length) problems.push(`${bad.join('; ')}\n${how}`);
    rmSync(stateBase, { recursive: true, force: true });
    if (enough && problems.some(enough)) break;
  }
  console.log(`crash explorer [launcher: ${s.name}]: ${rec.ops.length} operations, ${gen.enumerated} states enumerated, ${gen.states.length} made, ${n} of ${distinct.size} distinct checked, ${problems.length} violating`);
  return { checked: n, problems };
}

for (const s of SCENARIOS) {
  test(`${s.name}: every state a power cut leaves runs the trial at most once, boots, and settles on one version`, async (t) => {
    if (!requireStrace(t)) return;
    const x = await explorePowerCuts(t, s, LAUNCHER, crashCap());
    assert.ok(x.checked > 0);
    assert.deepEqual(x.problems.slice(0, 3), []);
  });
}

test('a launcher that does not fsync the folder after its renames is caught by the power cuts', async (t) => {
  if (!requireStrace(t)) return;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-crash-launcher-wrong-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // A kill cannot tell it from the real one: only a power cut undoes a rename not yet fsynced.
  const launcher = wrongLauncher(dir, 'no-folder-fsync', [['mv -fT -- "$self/$1" "$self/$2" && sync -- "$self"; }', 'mv -fT -- "$self/$1" "$self/$2"; }']]);
  const ranTwice = (p: string) => p.includes('versions/2.0.0 ran 2 times');
  const x = await explorePowerCuts(t, SCENARIOS[0]!, launcher, mutationCap(), ranTwice);
  assert.ok(x.problems.some(ranTwice), x.problems.join('\n\n'));
  console.log(x.problems[0]);
});
