// What a run's analysis is asked to do (docs/design.md §19, "Judgement"): its mode, its window and
// a threshold per signal, with their command-line parsers. The thresholds are effects, in the
// signal's own unit: how much worse than the baseline the canary cohort must be, beyond the
// statistical test, before the signal fails.
import { StewardError } from '../../core/errors.js';
import { parseDuration } from '../cli/parse-options.js';

export type AnalysisMode = 'off' | 'observe' | 'enforce';
export const ANALYSIS_MODES: readonly AnalysisMode[] = ['off', 'observe', 'enforce'];

export type SignalName = 'restart-rate' | 'liveness-failures' | 'error-ratio';
export const SIGNAL_NAMES: readonly SignalName[] = ['restart-rate', 'liveness-failures', 'error-ratio'];

export interface AnalysisThresholds {
  // Restarts per node-hour more than the baseline's (a rate, e.g. 0.5).
  restartRate: number;
  // Failed liveness probes per node-hour more than the baseline's.
  livenessRate: number;
  // Errors per request more than the baseline's, as a fraction (0.005 = 0.5 percentage points).
  errorRatio: number;
}

export interface AnalysisPolicy {
  mode: AnalysisMode;
  // --analysis-window: how long a step is watched before it is judged; default 10 min.
  windowMs: number;
  thresholds: AnalysisThresholds;
  // The minimum sample; defaults MIN_SAMPLE. Not a flag: tests and benches set it.
  minSample?: Partial<MinSample>;
}

// Too little of any of these makes a signal inconclusive, never a pass.
export interface MinSample {
  // A node counts in its cohort only with samples spanning at least this share of the window.
  coverage: number;
  // Nodes with data per cohort (the test's own power decides beyond this: see mann-whitney.ts).
  nodes: number;
  // Requests per cohort over the window, for the error ratio.
  requests: number;
}

export const MIN_SAMPLE: MinSample = { coverage: 0.5, nodes: 1, requests: 1000 };

export const DEFAULT_THRESHOLDS: AnalysisThresholds = { restartRate: 0.5, livenessRate: 1, errorRatio: 0.005 };
export const DEFAULT_ANALYSIS_WINDOW_MS = 10 * 60_000;
// The window's bounds: a minute has one sample (heartbeats are kept one a minute, record-signals.ts),
// and samples are kept for twice the longest window (SIGNAL_RETENTION_MS).
export const MIN_ANALYSIS_WINDOW_MS = 2 * 60_000;
export const MAX_ANALYSIS_WINDOW_MS = 60 * 60_000;

// The policy a run gets when nothing was asked: observe, over the default window, default thresholds.
export function defaultAnalysisPolicy(mode: AnalysisMode = 'observe'): AnalysisPolicy {
  return { mode, windowMs: DEFAULT_ANALYSIS_WINDOW_MS, thresholds: { ...DEFAULT_THRESHOLDS } };
}

const KEYS: Record<SignalName, keyof AnalysisThresholds> = { 'restart-rate': 'restartRate', 'liveness-failures': 'livenessRate', 'error-ratio': 'errorRatio' };

// --analysis off|observe|enforce.
export function parseAnalysisMode(text: string): AnalysisMode {
  if (!(ANALYSIS_MODES as readonly string[]).includes(text)) throw new StewardError('USAGE', `--analysis ${JSON.stringify(text)} is not one of off, observe, enforce`);
  return text as AnalysisMode;
}

// --analysis-window DURATION, from MIN_ANALYSIS_WINDOW_MS to MAX_ANALYSIS_WINDOW_MS.
export function parseAnalysisWindow(text: string): number {
  const ms = parseDuration(text, '--analysis-window');
  if (ms < MIN_ANALYSIS_WINDOW_MS || ms > MAX_ANALYSIS_WINDOW_MS) {
    throw new StewardError('USAGE', `--analysis-window ${JSON.stringify(text)} is outside 2m to 1h: samples are kept one a minute, for twice the longest window`);
  }
  return ms;
}

// --analysis-threshold NAME=VALUE: `restart-rate=0.5` (restarts per node-hour), `liveness-failures=1`
// (failures per node-hour), `error-ratio=1%` or `error-ratio=0.01` (errors per request).
export function parseAnalysisThreshold(text: string): { key: keyof AnalysisThresholds; value: number } {
  const m = /^([a-z-]+)=(\d{1,9}(?:\.\d{1,9})?)(%?)$/.exec(text);
  const key = m ? KEYS[m[1] as SignalName] : undefined;
  if (!m || !key) {
    throw new StewardError('USAGE', `--analysis-threshold ${JSON.stringify(text)} is not NAME=VALUE with NAME one of ${SIGNAL_NAMES.join(', ')} (like restart-rate=0.5 or error-ratio=1%)`);
  }
  const value = Number(m[2]) / (m[3] ? 100 : 1);
  if (m[3] && key !== 'errorRatio') throw new StewardError('USAGE', `--analysis-threshold ${JSON.stringify(text)}: only error-ratio is a percentage; ${m[1]} is per node-hour`);
  if (key === 'errorRatio' && value > 1) throw new StewardError('USAGE', `--analysis-threshold ${JSON.stringify(text)}: an error ratio is at most 100%`);
  if (!Number.isFinite(value)) throw new StewardError('USAGE', `--analysis-threshold ${JSON.stringify(text)} is not a number`);
  return { key, value };
}
