// The judgement of a step, pure (docs/design.md §19, "Judgement"): each signal of the canary cohort
// against the baseline cohort, with the Mann-Whitney U test (one-sided: canaries worse) at
// SIGNIFICANCE and the policy's threshold on the effect, given enough sample; then the step's
// verdict: fail if any signal fails, else inconclusive if any is, else pass.
import type { CohortFigures, Judgement, SignalJudgement, Verdict } from './judgement.js';
import { mannWhitneyGreater, smallestP } from './mann-whitney.js';
import type { NodeIncrease } from './node-increase.js';
import { MIN_SAMPLE, type AnalysisPolicy, type MinSample, type SignalName } from './policy.js';

// The test's level: a signal fails only when canaries this much worse would come by chance less
// than once in a thousand steps. Rare events make per-node rates lumpy (most nodes at zero), and
// at 1 % a release like the old one failed about 0.4 % of steps in the seeded simulation of 5
// canaries against 50 nodes; at 0.1 %, none of 1,000, while an error ratio of 0.1 % grown to 2 %
// still fails 99 % of them (test/property/analysis-seeded-noise.test.ts). Its price: a cohort
// must be large enough for any split to reach it (smallestP): 2 canaries need 44 baseline nodes,
// 3 need 17, 5 need 8.
export const SIGNIFICANCE = 0.001;

const HOUR_MS = 3_600_000;

// The test ranks the canaries against at most this many baseline nodes, taken evenly in node order:
// past it, a larger baseline barely adds power (a small canary cohort bounds it), and the exact
// count stays within a fraction of a second. The pooled figures use every node.
export const MAX_TEST_BASELINE = 1000;

function evenly<T>(xs: readonly T[], max: number): T[] {
  if (xs.length <= max) return [...xs];
  return Array.from({ length: max }, (_, i) => xs[Math.floor((i * xs.length) / max)]!);
}

export interface CohortInput {
  // The cohort's nodes as asked (with or without data).
  nodeIds: readonly string[];
  // What each node's samples said, null when it had no two samples in the window.
  increases: ReadonlyMap<string, NodeIncrease | null>;
}

export interface JudgeInput {
  canary: CohortInput;
  baseline: CohortInput;
  from: number;
  to: number;
  policy: AnalysisPolicy;
}

interface NodeValue {
  value: number;
  // Hours of exposure (the rates) or requests (the ratio): what the pooled figure weighs it by.
  weight: number;
  count: number;
}

interface SignalSpec {
  signal: SignalName;
  threshold: number;
  // A node's value for this signal, or null (no data).
  of(n: NodeIncrease): NodeValue | null;
  // A figure for people.
  show(value: number): string;
  sampleName: 'node-min' | 'req';
}

const pct = (v: number) => `${(v * 100).toFixed(v < 0.001 && v > 0 ? 3 : v < 0.1 ? 2 : 1)} %`;
const perHour = (v: number) => `${v.toFixed(v < 1 ? 2 : 1)}/h`;
const thousands = (n: number) => Math.round(n).toLocaleString('en-US');

function specs(policy: AnalysisPolicy): SignalSpec[] {
  const rate = (signal: SignalName, threshold: number, pick: (n: NodeIncrease) => number): SignalSpec => ({
    signal,
    threshold,
    of: (n) => (n.spanMs <= 0 ? null : { value: pick(n) / (n.spanMs / HOUR_MS), weight: n.spanMs / HOUR_MS, count: pick(n) }),
    show: perHour,
    sampleName: 'node-min',
  });
  return [
    rate('restart-rate', policy.thresholds.restartRate, (n) => n.restarts),
    rate('liveness-failures', policy.thresholds.livenessRate, (n) => n.livenessFailures),
    {
      signal: 'error-ratio',
      threshold: policy.thresholds.errorRatio,
      // Why errors are capped at requests: a node's counters are its word, and a ratio above one is noise.
      of: (n) => (n.requests === null || n.errors === null || n.requests <= 0 ? null : { value: Math.min(n.errors, n.requests) / n.requests, weight: n.requests, count: Math.min(n.errors, n.requests) }),
      show: pct,
      sampleName: 'req',
    },
  ];
}

// A node's value to two significant digits for the test's ranks: 6.47/h and 6.52/h are the same
// rate within a heartbeat's jitter of the node's span, and ties let the test stay exact (see
// mann-whitney.ts) on fleets of thousands, where the approximation's tail is too light.
export function twoDigits(v: number): number {
  return v === 0 ? 0 : Number(v.toPrecision(2));
}

interface Cohort {
  values: number[];
  figures: CohortFigures;
  // Nodes with a request counter but no request in the window (the ratio has no value for them).
  idle: number;
}

function cohortOf(input: CohortInput, spec: SignalSpec, minSpanMs: number): Cohort {
  const values: number[] = [];
  let weight = 0;
  let count = 0;
  let idle = 0;
  for (const id of input.nodeIds) {
    const inc = input.increases.get(id);
    if (!inc || inc.spanMs < minSpanMs) continue;
    if (spec.signal === 'error-ratio' && inc.requests === 0) idle++;
    const v = spec.of(inc);
    if (!v) continue;
    values.push(twoDigits(v.value));
    weight += v.weight;
    count += v.count;
  }
  const value = values.length === 0 ? null : count / weight;
  const sample = spec.sampleName === 'req' ? weight : weight * 60;
  return { values, figures: { nodes: values.length, value, sample: Math.round(sample) }, idle };
}

function describe(spec: Pick<SignalSpec, 'show' | 'sampleName'>, name: string, f: CohortFigures): string {
  const sample = spec.sampleName === 'req' ? `${thousands(f.sample)} req` : `${thousands(f.sample)} node-min`;
  return `${name} ${f.value === null ? 'no data' : spec.show(f.value)} (${f.nodes} node${f.nodes === 1 ? '' : 's'}, ${sample})`;
}

// One line with both cohorts' figures: "error-ratio: canary 2.1 % (3 nodes, 14,000 req) vs baseline 0.1 % (47 nodes, 210,000 req)".
export function figuresLine(s: SignalJudgement): string {
  const spec = SPEC_SHOW[s.signal];
  return `${s.signal}: ${describe(spec, 'canary', s.canary)} vs ${describe(spec, 'baseline', s.baseline)}`;
}

const SPEC_SHOW: Record<SignalName, Pick<SignalSpec, 'show' | 'sampleName'>> = {
  'restart-rate': { show: perHour, sampleName: 'node-min' },
  'liveness-failures': { show: perHour, sampleName: 'node-min' },
  'error-ratio': { show: pct, sampleName: 'req' },
};

function judgeSignal(spec: SignalSpec, input: JudgeInput, min: MinSample): SignalJudgement | null {
  const minSpanMs = min.coverage * (input.to - input.from);
  const canary = cohortOf(input.canary, spec, minSpanMs);
  const baseline = cohortOf(input.baseline, spec, minSpanMs);
  const out = (verdict: Verdict, why: string): SignalJudgement => ({ signal: spec.signal, verdict, canary: canary.figures, baseline: baseline.figures, why });
  if (spec.signal === 'error-ratio' && canary.figures.nodes + baseline.figures.nodes + canary.idle + baseline.idle === 0 && !reportsRequests(input)) {
    // The app's manifest names no metrics, or no node scraped them: no such signal, left out.
    return null;
  }
  const covered = `at least ${Math.round(min.coverage * 100)} % of the window`;
  if (input.baseline.nodeIds.length === 0) return out('inconclusive', 'the baseline has no nodes: no node of the selection is still on the old version to compare with');
  if (input.canary.nodeIds.length === 0) return out('inconclusive', 'the canary cohort has no nodes');
  if (canary.figures.nodes === 0) return out('inconclusive', `no data: no canary node reported ${spec.signal} over ${covered}`);
  if (baseline.figures.nodes === 0) return out('inconclusive', `no data: no baseline node reported ${spec.signal} over ${covered}`);
  if (canary.figures.nodes < min.nodes || baseline.figures.nodes < min.nodes) return out('inconclusive', `too few nodes with data: at least ${min.nodes} per cohort`);
  if (spec.sampleName === 'req' && (canary.figures.sample < min.requests || baseline.figures.sample < min.requests)) {
    return out('inconclusive', `too few requests: at least ${thousands(min.requests)} per cohort over the window`);
  }
  if (smallestP(canary.figures.nodes, baseline.figures.nodes) > SIGNIFICANCE) {
    return out(
      'inconclusive',
      `too few nodes for the test: ${canary.figures.nodes} canary against ${baseline.figures.nodes} baseline node${baseline.figures.nodes === 1 ? '' : 's'} cannot show a difference at p < ${SIGNIFICANCE}, however large`,
    );
  }
  const test = mannWhitneyGreater(canary.values, evenly(baseline.values, MAX_TEST_BASELINE));
  const effect = (canary.figures.value as number) - (baseline.figures.value as number);
  const p = test.p < 0.0001 ? 'p < 0.0001' : `p = ${test.p.toFixed(4)}`;
  const by = `${effect >= 0 ? 'worse' : 'better'} by ${spec.show(Math.abs(effect))}, threshold ${spec.show(spec.threshold)}`;
  if (test.p < SIGNIFICANCE && effect > spec.threshold) return out('fail', `canaries worse: ${by}; Mann-Whitney ${p}`);
  if (test.p < SIGNIFICANCE) return out('pass', `canaries worse within the threshold: ${by}; Mann-Whitney ${p}`);
  return out('pass', `no significant difference: ${by}; Mann-Whitney ${p}`);
}

// Whether any node of either cohort carried request counters at all in the window.
function reportsRequests(input: JudgeInput): boolean {
  for (const c of [input.canary, input.baseline]) for (const inc of c.increases.values()) if (inc && inc.requests !== null) return true;
  return false;
}

// The step's judgement over the window [from, to).
export function judgeCohorts(input: JudgeInput): Judgement {
  const min: MinSample = { ...MIN_SAMPLE, ...input.policy.minSample };
  const signals = specs(input.policy)
    .map((s) => judgeSignal(s, input, min))
    .filter((s): s is SignalJudgement => s !== null);
  const failed = signals.filter((s) => s.verdict === 'fail');
  const unsure = signals.filter((s) => s.verdict === 'inconclusive');
  const verdict: Verdict = failed.length > 0 ? 'fail' : unsure.length > 0 ? 'inconclusive' : 'pass';
  const named = verdict === 'fail' ? failed : verdict === 'inconclusive' ? unsure : signals;
  const summary =
    verdict === 'pass'
      ? `pass: ${named.map(figuresLine).join('; ')}`
      : `${verdict}: ${named.map((s) => `${figuresLine(s)} — ${s.why}`).join('; ')}`;
  return { verdict, from: new Date(input.from).toISOString(), to: new Date(input.to).toISOString(), signals, summary };
}
