// What `rollout start` and `rollout retry` may ask for (docs/design.md §11), its defaults, and the policy
// a run records. Every value is checked here: a bad one is a USAGE error (exit 2).
import { randomInt } from 'node:crypto';
import { StewardError } from '../../core/errors.js';
import type { RolloutPolicy } from '../../core/rollout-planner.js';
import { parseAmount } from '../../core/rollout-policy.js';
import { parseSelector } from '../../core/selector.js';
import type { AnalysisMode } from '../../core/rollout-planner.js';
import { DEFAULT_RUN_ANALYSIS, MAX_ANALYSIS_WINDOW_MS, MIN_ANALYSIS_WINDOW_MS, type RunAnalysis } from '../../core/run-analysis.js';
import { checkTimeZone, parseWindow } from '../../core/windows.js';
import type { RunPolicy } from '../store/store.js';

export const DEFAULT_VERDICT_TIMEOUT_MS = 30 * 60_000;
export const DEFAULT_BAKE_MS = 5 * 60_000;
export const DEFAULT_MAX_REFUSED = '50%';
// docs/design.md §18: more of one batch than this could not fetch the artifact, and the run halts.
export const DEFAULT_MAX_FETCH_FAILURES = '20%';

// Each field left out takes the default (start) or the retried run's value (retry).
export interface RunOptions {
  selector?: string;
  canaries?: number;
  // Named canaries (--canary, repeatable).
  canary?: string[];
  seed?: number;
  batch?: string;
  bakeMs?: number;
  maxFailures?: number;
  maxRefused?: string;
  maxFetchFailures?: string;
  verdictTimeoutMs?: number;
  allowRetryReverted?: boolean;
  windows?: string[];
  tz?: string;
  startAt?: number | null;
  // --analysis, --analysis-window, --analysis-threshold (docs/design.md §19).
  analysis?: AnalysisMode;
  analysisWindowMs?: number;
  analysisThresholds?: RunAnalysis['thresholds'];
}

const DEFAULTS: Omit<RunPolicy, 'canarySeed' | 'failuresCarried' | 'behind' | 'retryOf'> = {
  selector: '',
  canaries: 1,
  namedCanaries: [],
  batch: '1',
  bakeMs: DEFAULT_BAKE_MS,
  maxFailures: 0,
  maxRefused: DEFAULT_MAX_REFUSED,
  maxFetchFailures: DEFAULT_MAX_FETCH_FAILURES,
  verdictTimeoutMs: DEFAULT_VERDICT_TIMEOUT_MS,
  allowRetryReverted: false,
  windows: [],
  tz: 'UTC',
  startAt: null,
  analysis: DEFAULT_RUN_ANALYSIS,
};

// A fresh canary seed: 31 random bits (a safe integer in every store).
export function newCanarySeed(): number {
  return randomInt(0, 2 ** 31);
}

// The policy a run records: `opts` over `base` (the defaults, or the retried run's), checked.
export function resolvePolicy(opts: RunOptions, base: Partial<RunPolicy> = {}): Omit<RunPolicy, 'failuresCarried' | 'behind' | 'retryOf'> {
  const b = { ...DEFAULTS, ...base };
  const policy = {
    selector: opts.selector !== undefined ? parseSelector(opts.selector).text : b.selector,
    canaries: opts.canaries ?? b.canaries,
    namedCanaries: opts.canary ?? b.namedCanaries,
    canarySeed: opts.seed ?? newCanarySeed(),
    batch: opts.batch ?? b.batch,
    bakeMs: opts.bakeMs ?? b.bakeMs,
    maxFailures: opts.maxFailures ?? b.maxFailures,
    maxRefused: opts.maxRefused ?? b.maxRefused,
    maxFetchFailures: opts.maxFetchFailures ?? b.maxFetchFailures,
    verdictTimeoutMs: opts.verdictTimeoutMs ?? b.verdictTimeoutMs,
    allowRetryReverted: opts.allowRetryReverted ?? b.allowRetryReverted,
    windows: opts.windows ?? b.windows,
    tz: opts.tz ?? b.tz,
    startAt: opts.startAt !== undefined ? opts.startAt : b.startAt,
    analysis: resolveAnalysis(opts, b.analysis),
  };
  plannerPolicy({ ...policy, failuresCarried: 0, behind: false, retryOf: null });
  if (!Number.isSafeInteger(policy.canaries) || policy.canaries < 0 || policy.canaries > 1000) throw new StewardError('USAGE', `--canaries ${policy.canaries} is not a count from 0 to 1000`);
  if (new Set(policy.namedCanaries).size !== policy.namedCanaries.length) throw new StewardError('USAGE', '--canary names a node twice');
  if (!Number.isSafeInteger(policy.maxFailures) || policy.maxFailures < 0) throw new StewardError('USAGE', `--max-failures ${policy.maxFailures} is not a count`);
  if (!Number.isSafeInteger(policy.canarySeed) || policy.canarySeed < 0 || policy.canarySeed >= 2 ** 32) throw new StewardError('USAGE', `--seed ${policy.canarySeed} is not an integer from 0 to 4294967295`);
  return policy;
}

// The analysis a run records: the flags given over `base`'s (the default, or the retried run's).
function resolveAnalysis(opts: RunOptions, base: RunAnalysis): RunAnalysis {
  const a: RunAnalysis = {
    mode: opts.analysis ?? base.mode,
    windowMs: opts.analysisWindowMs ?? base.windowMs,
    thresholds: { ...base.thresholds, ...(opts.analysisThresholds ?? {}) },
  };
  if (!['off', 'observe', 'enforce'].includes(a.mode)) throw new StewardError('USAGE', `--analysis ${JSON.stringify(a.mode)} is not one of off, observe, enforce`);
  if (!Number.isSafeInteger(a.windowMs) || a.windowMs < MIN_ANALYSIS_WINDOW_MS || a.windowMs > MAX_ANALYSIS_WINDOW_MS) {
    throw new StewardError('USAGE', `--analysis-window ${a.windowMs} ms is not from ${MIN_ANALYSIS_WINDOW_MS / 60_000}m to ${MAX_ANALYSIS_WINDOW_MS / 60_000}m`);
  }
  return a;
}

// The planner's view of a recorded policy (windows and amounts parsed).
export function plannerPolicy(r: RunPolicy): RolloutPolicy {
  return {
    canaries: r.canaries,
    namedCanaries: r.namedCanaries,
    canarySeed: r.canarySeed,
    batch: parseAmount(r.batch, '--batch', { min: 1 }),
    bakeMs: r.bakeMs,
    maxFailures: r.maxFailures,
    failuresCarried: r.failuresCarried,
    maxRefused: parseAmount(r.maxRefused, '--max-refused', { min: 0 }),
    maxFetchFailures: parseAmount(r.maxFetchFailures, '--max-fetch-failures', { min: 0 }),
    verdictTimeoutMs: r.verdictTimeoutMs,
    allowRetryReverted: r.allowRetryReverted,
    windows: r.windows.map(parseWindow),
    tz: checkTimeZone(r.tz),
    startAt: r.startAt,
  };
}
