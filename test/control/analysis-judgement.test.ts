// The judgement of a step (docs/design.md §19, "Judgement"), pure, on a fake clock: table tests of the
// cohorts' figures and verdicts, counters that reset, go backwards or are absent, and the test
// and parsers beneath.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { judgeCohorts } from '../../src/control/analysis/judge-cohorts.js';
import { cohortInput } from '../../src/control/analysis/judge-step.js';
import type { Judgement } from '../../src/control/analysis/judgement.js';
import { mannWhitneyGreater, smallestP } from '../../src/control/analysis/mann-whitney.js';
import { nodeIncrease } from '../../src/control/analysis/node-increase.js';
import { defaultAnalysisPolicy, parseAnalysisMode, parseAnalysisThreshold, parseAnalysisWindow } from '../../src/control/analysis/policy.js';
import { parseAppSignals } from '../../src/control/analysis/signals-shape.js';
import type { SignalSample } from '../../src/control/store/store.js';
import { StewardError } from '../../src/core/errors.js';
import { MINUTE, T0 } from '../helpers/control-harness.js';
import { mulberry32 } from '../helpers/prng.js';

const FROM = T0 - (T0 % MINUTE);
const HOUR = 60 * MINUTE;

interface Rates {
  restartsPerHour?: number;
  livenessPerHour?: number;
  // Requests per minute, and the share of errors; null: the app has no request counters.
  requestsPerMinute?: number | null;
  errorRatio?: number;
}

interface SeriesOptions {
  version?: string;
  minutes?: number;
  // Where in its minute grid the node's counters step (0..1), so that nodes differ a little.
  phase?: number;
  // At this minute the app restarts: a new `since`, and its request counters begin again at 0.
  restartAt?: number;
  // At this minute the request counter goes down without a new `since`.
  backwardsAt?: number;
  // Samples before this minute are of this other version (the node switched at it).
  switchedAt?: { minute: number; from: string };
}

// One sample a minute of a node whose counters grow steadily at `rates` (deterministic: each
// counter is the floor of its expected value, shifted by the node's phase).
function series(nodeId: string, rates: Rates, o: SeriesOptions = {}): SignalSample[] {
  const minutes = o.minutes ?? 60;
  const phase = o.phase ?? 0;
  const rpm = rates.requestsPerMinute === undefined ? 100 : rates.requestsPerMinute;
  const out: SignalSample[] = [];
  let since = FROM - HOUR;
  let offset = { requests: 5000, errors: 5, restarts: 2, liveness: 1 };
  for (let i = 0; i < minutes; i++) {
    const at = FROM + i * MINUTE + 30_000;
    if (o.restartAt === i) {
      since = at - 1000;
      offset = { requests: -Math.floor((i + phase) * (rpm ?? 0)), errors: -Math.floor((i + phase) * (rpm ?? 0) * (rates.errorRatio ?? 0.001)), restarts: 0, liveness: 0 };
      offset.restarts = -Math.floor(((i + phase) * (rates.restartsPerHour ?? 0)) / 60);
      offset.liveness = -Math.floor(((i + phase) * (rates.livenessPerHour ?? 0)) / 60);
    }
    if (o.backwardsAt === i) offset.requests -= Math.floor((i + phase) * (rpm ?? 0)) + 5000;
    const t = i + phase;
    const requests = rpm === null ? null : Math.floor(t * rpm) + offset.requests;
    out.push({
      nodeId, app: 'web', minute: at - (at % MINUTE), at,
      version: o.switchedAt && i < o.switchedAt.minute ? o.switchedAt.from : (o.version ?? '2.0.0'),
      since,
      restarts: Math.floor((t * (rates.restartsPerHour ?? 0)) / 60) + offset.restarts,
      livenessFailures: Math.floor((t * (rates.livenessPerHour ?? 0)) / 60) + offset.liveness,
      watchdogKills: 0, oomKills: 0, cpuSeconds: t, rssBytes: 40e6,
      requests, errors: rpm === null ? null : Math.floor(t * rpm * (rates.errorRatio ?? 0.001)) + offset.errors,
      scrape: rpm === null ? null : 'ok',
    });
  }
  return out;
}

interface Fleet {
  canaries: number;
  baseline: number;
  canary?: Rates;
  base?: Rates;
  canaryOpts?: (i: number) => SeriesOptions;
  baseOpts?: (i: number) => SeriesOptions;
  minutes?: number;
}

const HEALTHY: Rates = { restartsPerHour: 3, livenessPerHour: 2, requestsPerMinute: 100, errorRatio: 0.001 };

function judge(f: Fleet): Judgement {
  const minutes = f.minutes ?? 60;
  const cids = Array.from({ length: f.canaries }, (_, i) => `n-c${i}`);
  const bids = Array.from({ length: f.baseline }, (_, i) => `n-b${i}`);
  const cs = cids.flatMap((id, i) => series(id, { ...HEALTHY, ...f.canary }, { phase: (i * 0.37) % 1, minutes, version: '2.0.0', ...f.canaryOpts?.(i) }));
  const bs = bids.flatMap((id, i) => series(id, { ...HEALTHY, ...f.base }, { phase: (i * 0.61) % 1, minutes, version: '1.0.0', ...f.baseOpts?.(i) }));
  const policy = { ...defaultAnalysisPolicy('enforce'), windowMs: minutes * MINUTE };
  return judgeCohorts({ canary: cohortInput(cids, cs, '2.0.0'), baseline: cohortInput(bids, bs, '1.0.0'), from: FROM, to: FROM + minutes * MINUTE, policy });
}

const verdicts = (j: Judgement) => Object.fromEntries(j.signals.map((s) => [s.signal, s.verdict]));
const signal = (j: Judgement, name: string) => j.signals.find((s) => s.signal === name)!;

test('a release like the old one passes every signal', () => {
  const j = judge({ canaries: 5, baseline: 40 });
  assert.deepEqual(verdicts(j), { 'restart-rate': 'pass', 'liveness-failures': 'pass', 'error-ratio': 'pass' });
  assert.equal(j.verdict, 'pass');
  assert.match(j.summary, /^pass: restart-rate: canary 2\.0\/h \(5 nodes, 295 node-min\) vs baseline 2\.0\/h \(40 nodes, 2,360 node-min\); .*error-ratio: canary 0\.085 % \(5 nodes, 29,501 req\) vs baseline 0\.085 % \(40 nodes, 236,021 req\)$/);
  assert.equal(j.from, new Date(FROM).toISOString());
  assert.equal(j.to, new Date(FROM + HOUR).toISOString());
});

test('table: each signal, cohort and counter case has its verdict and its why', async (t) => {
  const cases: Array<{ name: string; fleet: Fleet; verdict: Judgement['verdict']; signals: Record<string, string>; why?: [string, RegExp]; summary?: RegExp }> = [
    {
      name: 'a restart rate doubled fails restart-rate, with both cohorts in the summary',
      fleet: { canaries: 5, baseline: 40, base: { restartsPerHour: 6 }, canary: { restartsPerHour: 12 } },
      verdict: 'fail',
      signals: { 'restart-rate': 'fail', 'liveness-failures': 'pass', 'error-ratio': 'pass' },
      summary: /^fail: restart-rate: canary 11\.2\/h \(5 nodes, 295 node-min\) vs baseline 5\.1\/h \(40 nodes, 2,360 node-min\) — canaries worse: worse by 6\.1\/h, threshold 0\.50\/h; Mann-Whitney p < 0\.0001$/,
    },
    {
      name: 'an error ratio from 0.1 % to 2 % fails error-ratio',
      fleet: { canaries: 3, baseline: 47, canary: { errorRatio: 0.02 } },
      verdict: 'fail',
      signals: { 'restart-rate': 'pass', 'liveness-failures': 'pass', 'error-ratio': 'fail' },
      summary: /^fail: error-ratio: canary 2\.00 % \(3 nodes, 17,700 req\) vs baseline 0\.085 % \(47 nodes, 277,326 req\) — canaries worse/,
    },
    {
      name: 'an error ratio a little worse, within the threshold, passes',
      fleet: { canaries: 5, baseline: 40, canary: { errorRatio: 0.003 } },
      verdict: 'pass',
      signals: { 'restart-rate': 'pass', 'liveness-failures': 'pass', 'error-ratio': 'pass' },
      why: ['error-ratio', /^canaries worse within the threshold: worse by 0\.20 %, threshold 0\.50 %; Mann-Whitney p/],
    },
    {
      name: 'no data from the canaries is inconclusive, never a pass',
      fleet: { canaries: 5, baseline: 40, canaryOpts: () => ({ minutes: 0 }) },
      verdict: 'inconclusive',
      signals: { 'restart-rate': 'inconclusive', 'liveness-failures': 'inconclusive', 'error-ratio': 'inconclusive' },
      why: ['restart-rate', /^no data: no canary node reported restart-rate over at least 50 % of the window$/],
    },
    {
      name: 'too short a span of samples is no data for that node',
      fleet: { canaries: 5, baseline: 40, canaryOpts: () => ({ minutes: 20 }) },
      verdict: 'inconclusive',
      signals: { 'restart-rate': 'inconclusive', 'liveness-failures': 'inconclusive', 'error-ratio': 'inconclusive' },
    },
    {
      name: 'a baseline with no nodes is inconclusive, and says why',
      fleet: { canaries: 5, baseline: 0 },
      verdict: 'inconclusive',
      signals: { 'restart-rate': 'inconclusive', 'liveness-failures': 'inconclusive', 'error-ratio': 'inconclusive' },
      why: ['restart-rate', /^the baseline has no nodes: no node of the selection is still on the old version to compare with$/],
      summary: /^inconclusive: restart-rate: canary 2\.0\/h \(5 nodes, 295 node-min\) vs baseline no data \(0 nodes, 0 node-min\) — the baseline has no nodes/,
    },
    {
      name: 'a cohort of one canary, however bad, is too few for the test: inconclusive',
      fleet: { canaries: 1, baseline: 50, canary: { restartsPerHour: 60, errorRatio: 0.5 } },
      verdict: 'inconclusive',
      signals: { 'restart-rate': 'inconclusive', 'liveness-failures': 'inconclusive', 'error-ratio': 'inconclusive' },
      why: ['restart-rate', /^too few nodes for the test: 1 canary against 50 baseline nodes cannot show a difference at p < 0\.001, however large$/],
    },
    {
      name: 'a baseline of one node is too few too',
      fleet: { canaries: 5, baseline: 1 },
      verdict: 'inconclusive',
      signals: { 'restart-rate': 'inconclusive', 'liveness-failures': 'inconclusive', 'error-ratio': 'inconclusive' },
    },
    {
      name: 'an app with no traffic is inconclusive on its error ratio',
      fleet: { canaries: 5, baseline: 40, canary: { requestsPerMinute: 0 }, base: { requestsPerMinute: 0 } },
      verdict: 'inconclusive',
      signals: { 'restart-rate': 'pass', 'liveness-failures': 'pass', 'error-ratio': 'inconclusive' },
      why: ['error-ratio', /^no data: no canary node reported error-ratio/],
    },
    {
      name: 'too few requests is inconclusive',
      fleet: { canaries: 5, baseline: 40, canary: { requestsPerMinute: 2 } },
      verdict: 'inconclusive',
      signals: { 'restart-rate': 'pass', 'liveness-failures': 'pass', 'error-ratio': 'inconclusive' },
      why: ['error-ratio', /^too few requests: at least 1,000 per cohort over the window$/],
    },
    {
      name: 'an app restart (a new since, its counters from zero) is a reset, not a drop or a surge: pass',
      fleet: { canaries: 5, baseline: 40, canaryOpts: (i) => ({ restartAt: 20 + i }) },
      verdict: 'pass',
      signals: { 'restart-rate': 'pass', 'liveness-failures': 'pass', 'error-ratio': 'pass' },
    },
    {
      name: 'a request counter that goes backwards is a reset: pass',
      fleet: { canaries: 5, baseline: 40, canaryOpts: (i) => ({ backwardsAt: 30 + i }) },
      verdict: 'pass',
      signals: { 'restart-rate': 'pass', 'liveness-failures': 'pass', 'error-ratio': 'pass' },
    },
    {
      name: 'request counters absent from the canaries are no data for error-ratio, never zero errors',
      fleet: { canaries: 5, baseline: 40, canary: { requestsPerMinute: null } },
      verdict: 'inconclusive',
      signals: { 'restart-rate': 'pass', 'liveness-failures': 'pass', 'error-ratio': 'inconclusive' },
      why: ['error-ratio', /^no data: no canary node reported error-ratio/],
    },
    {
      name: 'request counters absent from every node (no metrics in the manifest): error-ratio is left out',
      fleet: { canaries: 5, baseline: 40, canary: { requestsPerMinute: null }, base: { requestsPerMinute: null } },
      verdict: 'pass',
      signals: { 'restart-rate': 'pass', 'liveness-failures': 'pass' },
    },
    {
      name: "a canary's minutes on the old version, before its switch, are not the new version's",
      fleet: { canaries: 5, baseline: 40, canary: { errorRatio: 0.02 }, canaryOpts: () => ({ switchedAt: { minute: 45, from: '1.0.0' } }) },
      verdict: 'inconclusive',
      signals: { 'restart-rate': 'inconclusive', 'liveness-failures': 'inconclusive', 'error-ratio': 'inconclusive' },
    },
    {
      name: 'canaries better than the baseline pass',
      fleet: { canaries: 5, baseline: 40, base: { restartsPerHour: 12, errorRatio: 0.05 } },
      verdict: 'pass',
      signals: { 'restart-rate': 'pass', 'liveness-failures': 'pass', 'error-ratio': 'pass' },
      why: ['restart-rate', /^no significant difference: better by/],
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const j = judge(c.fleet);
      assert.deepEqual(verdicts(j), c.signals, j.summary);
      assert.equal(j.verdict, c.verdict, j.summary);
      if (c.why) assert.match(signal(j, c.why[0]).why, c.why[1]);
      if (c.summary) assert.match(j.summary, c.summary);
    });
  }
});

test('a step fails when any signal fails, even beside an inconclusive one', () => {
  const j = judge({ canaries: 5, baseline: 40, canary: { restartsPerHour: 20, requestsPerMinute: 2 } });
  assert.deepEqual(verdicts(j), { 'restart-rate': 'fail', 'liveness-failures': 'pass', 'error-ratio': 'inconclusive' });
  assert.equal(j.verdict, 'fail');
  assert.match(j.summary, /^fail: restart-rate: /);
  assert.doesNotMatch(j.summary, /error-ratio/);
});

test("a node's increase counts resets as rate() does: a new since, or a counter going down", () => {
  const s = (at: number, since: number, restarts: number, requests: number | null, errors: number | null, version: string | null = '2') =>
    ({ at, since, version, restarts, livenessFailures: 0, requests, errors });
  // Steady: 10 minutes, restarts 2 → 5, requests 100 → 1100.
  assert.deepEqual(nodeIncrease([s(0, 1, 2, 100, 1), s(10 * MINUTE, 1, 5, 1100, 3)]), { spanMs: 10 * MINUTE, restarts: 3, livenessFailures: 0, requests: 1000, errors: 2, resets: 0 });
  // A new since: every counter began again; what it shows is all of the increase after the reset.
  assert.deepEqual(nodeIncrease([s(0, 1, 7, 5000, 40), s(MINUTE, 2, 1, 300, 2), s(2 * MINUTE, 2, 2, 500, 2)]), { spanMs: 2 * MINUTE, restarts: 2, livenessFailures: 0, requests: 500, errors: 2, resets: 1 });
  // Requests going down without a new since (the app's process restarted): the errors begin again with them.
  assert.deepEqual(nodeIncrease([s(0, 1, 0, 5000, 40), s(MINUTE, 1, 0, 300, 41), s(2 * MINUTE, 1, 0, 400, 42)]), { spanMs: 2 * MINUTE, restarts: 0, livenessFailures: 0, requests: 400, errors: 42, resets: 1 });
  // A restart counter going backwards is a reset too.
  assert.equal(nodeIncrease([s(0, 1, 9, null, null), s(MINUTE, 1, 1, null, null)])!.restarts, 1);
  // Absent request counters: no data (null), never zero.
  const absent = nodeIncrease([s(0, 1, 0, null, null), s(MINUTE, 1, 0, null, null)])!;
  assert.equal(absent.requests, null);
  assert.equal(absent.errors, null);
  // Present in one sample only: no pair, no data for the ratio; the restarts still count.
  assert.equal(nodeIncrease([s(0, 1, 0, 100, 0), s(MINUTE, 1, 1, null, null)])!.requests, null);
  // One sample, or none, is no data.
  assert.equal(nodeIncrease([s(0, 1, 0, 1, 1)]), null);
  assert.equal(nodeIncrease([]), null);
  // Samples of another version do not count, nor the pair across the switch.
  assert.deepEqual(nodeIncrease([s(0, 1, 0, 0, 0, '1'), s(MINUTE, 2, 3, 10, 0, '2'), s(2 * MINUTE, 2, 4, 20, 1, '2')], '2'), { spanMs: MINUTE, restarts: 1, livenessFailures: 0, requests: 10, errors: 1, resets: 0 });
});

test("Mann-Whitney's exact p agrees with counting every split, ties included; the normal approximation with the exact one where both apply", () => {
  assert.deepEqual(mannWhitneyGreater([3, 4, 5], [1, 2]), { u: 6, p: 0.1, exact: true });
  assert.equal(mannWhitneyGreater([0, 0], [0, 0, 0]).p, 1);
  const rand = mulberry32(7);
  for (let round = 0; round < 30; round++) {
    const n1 = 1 + Math.floor(rand() * 4);
    const n2 = 1 + Math.floor(rand() * 6);
    const draw = () => Math.floor(rand() * 4);
    const c = Array.from({ length: n1 }, draw);
    const b = Array.from({ length: n2 }, draw);
    const all = [...c, ...b];
    const uOf = (xs: number[], ys: number[]) => xs.reduce((a, x) => a + ys.reduce((s, y) => s + (x > y ? 1 : x === y ? 0.5 : 0), 0), 0);
    const u = uOf(c, b);
    // Every way to pick n1 of the n values as the canaries.
    let hits = 0;
    let total = 0;
    for (let mask = 0; mask < 1 << all.length; mask++) {
      if (popcount(mask) !== n1) continue;
      const xs = all.filter((_, i) => mask & (1 << i));
      const ys = all.filter((_, i) => !(mask & (1 << i)));
      total++;
      if (uOf(xs, ys) >= u - 1e-9) hits++;
    }
    const r = mannWhitneyGreater(c, b);
    assert.equal(r.u, u);
    assert.ok(Math.abs(r.p - hits / total) < 1e-9, `${JSON.stringify({ c, b })}: ${r.p} vs ${hits / total}`);
  }
  // 60 against 400 take the normal approximation; where both apply, it is close to the exact p.
  assert.equal(mannWhitneyGreater(Array.from({ length: 60 }, (_, i) => i % 7), Array.from({ length: 400 }, (_, i) => i % 6)).exact, false);
  for (const [c, b] of [[Array.from({ length: 12 }, (_, i) => i % 5), Array.from({ length: 40 }, (_, i) => i % 4)], [[5, 6, 7, 8, 9], Array.from({ length: 30 }, (_, i) => i % 7)]]) {
    const exact = mannWhitneyGreater(c!, b!);
    const normal = mannWhitneyGreater(c!, b!, true);
    assert.deepEqual([exact.exact, normal.exact], [true, false]);
    assert.ok(Math.abs(exact.p - normal.p) < 0.01 + 0.2 * exact.p, `exact ${exact.p} normal ${normal.p}`);
  }
  assert.equal(smallestP(5, 50), 1 / 3_478_761);
  assert.ok(smallestP(1, 50) > 0.001);
  assert.ok(smallestP(2, 44) < 0.001 && smallestP(2, 43) > 0.001);
});

function popcount(n: number): number {
  let c = 0;
  for (; n; n &= n - 1) c++;
  return c;
}

test('--analysis, --analysis-window and --analysis-threshold parse what the docs say and refuse the rest with USAGE', () => {
  assert.equal(parseAnalysisMode('enforce'), 'enforce');
  assert.equal(parseAnalysisWindow('10m'), 10 * MINUTE);
  assert.equal(parseAnalysisWindow('1h'), HOUR);
  assert.deepEqual(parseAnalysisThreshold('restart-rate=0.5'), { key: 'restartRate', value: 0.5 });
  assert.deepEqual(parseAnalysisThreshold('liveness-failures=2'), { key: 'livenessRate', value: 2 });
  assert.deepEqual(parseAnalysisThreshold('error-ratio=1%'), { key: 'errorRatio', value: 0.01 });
  assert.deepEqual(parseAnalysisThreshold('error-ratio=0.02'), { key: 'errorRatio', value: 0.02 });
  const usage = (re: RegExp) => (err: unknown) => err instanceof StewardError && err.code === 'USAGE' && re.test(err.message);
  assert.throws(() => parseAnalysisMode('on'), usage(/not one of off, observe, enforce/));
  assert.throws(() => parseAnalysisWindow('1m'), usage(/outside 2m to 1h/));
  assert.throws(() => parseAnalysisWindow('2h'), usage(/outside 2m to 1h/));
  assert.throws(() => parseAnalysisWindow('soon'), usage(/not a duration/));
  for (const bad of ['restart-rate', 'cpu=1', 'restart-rate=-1', 'restart-rate=1e3', 'error-ratio=', '=1', 'restart-rate=0.5/h']) {
    assert.throws(() => parseAnalysisThreshold(bad), usage(/not NAME=VALUE with NAME one of restart-rate, liveness-failures, error-ratio/), bad);
  }
  assert.throws(() => parseAnalysisThreshold('restart-rate=5%'), usage(/only error-ratio is a percentage/));
  assert.throws(() => parseAnalysisThreshold('error-ratio=150%'), usage(/at most 100%/));
});

test("an app's signals from a node are checked as hostile bytes: what does not fit is no data", () => {
  const ok = { since: '2026-12-07T05:00:00Z', restarts: 1, livenessFailures: 0, watchdogKills: 0, oomKills: 0, cpuSeconds: 1, rssBytes: 1e6 };
  assert.deepEqual(parseAppSignals({ signals: ok }), { since: Date.parse(ok.since), restarts: 1, livenessFailures: 0, watchdogKills: 0, oomKills: 0, cpuSeconds: 1, rssBytes: 1e6, requests: null, errors: null, scrape: null });
  assert.equal(parseAppSignals({ signals: { ...ok, requests: 10, errors: 1, scrape: { ok: true, at: ok.since } } })?.scrape, 'ok');
  assert.equal(parseAppSignals({ signals: { ...ok, scrape: { ok: false, code: 'SCRAPE_TOO_LARGE', at: ok.since } } })?.scrape, 'SCRAPE_TOO_LARGE');
  // Errors without requests are no ratio.
  assert.deepEqual([parseAppSignals({ signals: { ...ok, errors: 5 } })?.requests, parseAppSignals({ signals: { ...ok, errors: 5 } })?.errors], [null, null]);
  for (const bad of [
    { ...ok, restarts: -1 }, { ...ok, restarts: 1.5 }, { ...ok, restarts: 2 ** 60 }, { ...ok, cpuSeconds: 'lots' }, { ...ok, cpuSeconds: 1.5 }, { ...ok, since: 'yesterday' }, { ...ok, since: '2026-13-45T99:99:99Z' },
    { ...ok, requests: -5, errors: 0 }, { ...ok, scrape: { ok: false, code: '<script>', at: ok.since } }, { ...ok, rssBytes: null }, null, 'signals', [],
  ]) {
    assert.equal(parseAppSignals({ signals: bad }), null, JSON.stringify(bad));
  }
  assert.equal(parseAppSignals({}), null);
  assert.equal(parseAppSignals(null), null);
});
