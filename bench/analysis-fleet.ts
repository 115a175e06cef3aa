// docs/design.md §19's benchmark (issue 34): automated analysis on a simulated fleet.
//   34 halt: N nodes (1,000; quick 200) of a real control plane (in this process: HTTP, the
//     heartbeat path, the rollout ticker, SQLite) heartbeat once a simulated minute on a fake clock
//     (test/helpers/analysis-fleet.ts), their app signals sampled each minute; a release whose
//     error ratio goes from 0.1 % to 2 % is rolled out with --analysis enforce, a short window
//     (5 min) and batches of 10 %: the time from its first batch to its halt, in analysis windows
//     and in (simulated) seconds; and that no second batch went.
//   34 false halts: 100 releases identical to the old one (quick 20), each with its own seeded
//     noise, N nodes in batches of 10 % and a 10-minute window, played through the pure planner
//     and the real judgement (test/helpers/analysis-run-sim.ts): the share that halted or paused.
//   34 cpu: the control plane's CPU per analysis window: process.cpuUsage around each judgement of
//     the 34 halt run (its store read of the window's samples and the test), per judgement, beside
//     the window it judges.
//
//   node dist/bench/analysis-fleet.js [--quick] [--json] [--nodes N] [--null-runs N]
import { simulateAnalysedRun } from '../test/helpers/analysis-run-sim.js';
import { AnalysisFleet, ERRORS_2PCT, QUIET } from '../test/helpers/analysis-fleet.js';
import { MINUTE } from '../test/helpers/control-harness.js';
import { judgeStep } from '../src/control/analysis/judge-step.js';
import { startRun } from '../src/control/rollouts/start-run.js';
import type { JudgeStep } from '../src/control/rollouts/judge-steps.js';
import { benchArgs, median, note, printRow, series } from './lib.js';

const args = benchArgs(1, 1, ['--nodes', '--null-runs']);
const NODES = Number(args.rest.nodes ?? (args.quick ? 200 : 1000));
const NULL_RUNS = Number(args.rest['null-runs'] ?? (args.quick ? 20 : 100));
const WINDOW = 5 * MINUTE;

// 34 halt and 34 cpu.
const cpuMs: number[] = [];
const judge: JudgeStep = async (store, input) => {
  const before = process.cpuUsage();
  try {
    return await judgeStep(store, input);
  } finally {
    const d = process.cpuUsage(before);
    cpuMs.push((d.user + d.system) / 1000);
  }
};
note(args, `34 halt: enrolling ${NODES} simulated nodes`);
const wall0 = Date.now();
const fleet = await AnalysisFleet.start(null, { nodes: NODES, seed: 1, old: QUIET, next: ERRORS_2PCT, judge });
try {
  const run = await startRun(fleet.store, 'web', '1.1.0', { canaries: 0, batch: '10%', bakeMs: 0, analysis: 'enforce', analysisWindowMs: WINDOW });
  const firstBatchAt = (await fleet.store.read((tx) => tx.runs.issued(run.id)))[0]!.issuedAt;
  note(args, `34 halt: run ${run.id} started; playing minutes`);
  await fleet.until(6 * (WINDOW / MINUTE), async () => (await fleet.store.read((tx) => tx.runs.get(run.id)))!.status !== 'running');
  const ended = (await fleet.store.read((tx) => tx.runs.get(run.id)))!;
  const batches = new Set((await fleet.store.read((tx) => tx.runs.issued(run.id))).map((i) => i.batch)).size;
  const seconds = (ended.endedAt! - firstBatchAt) / 1000;
  const windows = seconds / (WINDOW / 1000);
  printRow(args, {
    row: '34 halt',
    what: `a bad release (errors 0.1 % to 2 %) on ${NODES} simulated nodes, --analysis enforce, window ${WINDOW / MINUTE} min, batches of 10 %: from its first batch to its halt`,
    unit: 'windows',
    steward: series([windows]),
    target: '<= 2 analysis windows, and before the second batch',
    met: ended.haltCode === 'ANALYSIS_FAILED' && windows <= 2 && batches === 1,
    extra: { 'seconds (simulated)': seconds, 'batches issued': batches, 'halt code': ended.haltCode, 'bench wall seconds': (Date.now() - wall0) / 1000 },
    notes: (ended.haltMessage ?? '').slice(0, 300),
  });
  printRow(args, {
    row: '34 cpu',
    what: `the control plane's CPU per analysis window: one judgement of ${Math.round(NODES / 10)} canaries against ${NODES - Math.round(NODES / 10)} baseline nodes (the store read of the window's samples and the test), beside the ${WINDOW / MINUTE}-minute window it judges`,
    unit: 'CPU ms',
    steward: series(cpuMs.length ? cpuMs : [NaN]),
    target: 'under 1 % of one core over the window',
    met: cpuMs.length > 0 && median(cpuMs) < WINDOW * 0.01,
    extra: { 'share of a core over the window, %': cpuMs.length ? ((100 * median(cpuMs)) / WINDOW).toFixed(4) : 'none', judgements: cpuMs.length },
  });
} finally {
  await fleet.close();
}

// 34 false halts.
note(args, `34 false halts: ${NULL_RUNS} null releases of ${NODES} nodes`);
let falseHalts = 0;
let pauses = 0;
let judgements = 0;
for (let seed = 1; seed <= NULL_RUNS; seed++) {
  const r = simulateAnalysedRun({ seed, nodes: NODES, batch: Math.ceil(NODES / 10), windowMs: 10 * MINUTE, old: QUIET, next: QUIET });
  judgements += r.judgements.length;
  if (r.status === 'halted') falseHalts++;
  if (r.status === 'paused') pauses++;
}
printRow(args, {
  row: '34 false halts',
  what: `${NULL_RUNS} releases identical to the old one (seeded noise), ${NODES} nodes in batches of 10 %, --analysis enforce, 10-minute window: runs halted`,
  unit: '%',
  steward: series([(100 * falseHalts) / NULL_RUNS]),
  target: '0 % (no false halt)',
  met: falseHalts === 0,
  extra: { 'runs paused (inconclusive)': pauses, 'steps judged': judgements },
  notes: 'played through the pure planner and the real judgement (the store read aside): what the 34 halt row runs over HTTP, 100 times',
});
