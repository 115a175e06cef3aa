// A run's automated analysis as it records it (docs/design.md §19): the mode, the window each step
// is judged over, and the thresholds the operator gave (the rest are the judgement's defaults).
// Stored as JSON in the runs and targets tables and checked whenever it is read: the database is
// not trusted to hold only what steward-control wrote.
import type { AnalysisMode } from './rollout-planner.js';
import * as z from './zod-mini.js';

export type ThresholdKey = 'restartRate' | 'livenessRate' | 'errorRatio';

export interface RunAnalysis {
  mode: AnalysisMode;
  windowMs: number;
  // Only those given by --analysis-threshold; the judgement's defaults fill the others.
  thresholds: Partial<Record<ThresholdKey, number>>;
}

export const DEFAULT_ANALYSIS_MODE: AnalysisMode = 'observe';
export const DEFAULT_ANALYSIS_WINDOW_MS = 10 * 60_000;
// The window's bounds, as the judgement's (src/control/analysis/policy.ts, which core may not
// import): signals are kept one sample a minute, for twice the longest window.
export const MIN_ANALYSIS_WINDOW_MS = 2 * 60_000;
export const MAX_ANALYSIS_WINDOW_MS = 60 * 60_000;

export const DEFAULT_RUN_ANALYSIS: RunAnalysis = { mode: DEFAULT_ANALYSIS_MODE, windowMs: DEFAULT_ANALYSIS_WINDOW_MS, thresholds: {} };
// Runs from before analysis, pin runs and a target's revert: nothing is judged.
export const ANALYSIS_OFF: RunAnalysis = { mode: 'off', windowMs: DEFAULT_ANALYSIS_WINDOW_MS, thresholds: {} };

const threshold = z.number().check(z.minimum(0), z.maximum(1e9));

export const runAnalysisSchema = z.strictObject({
  mode: z.enum(['off', 'observe', 'enforce']),
  windowMs: z.number().check(z.int(), z.minimum(MIN_ANALYSIS_WINDOW_MS), z.maximum(MAX_ANALYSIS_WINDOW_MS)),
  thresholds: z.strictObject({ restartRate: z.optional(threshold), livenessRate: z.optional(threshold), errorRatio: z.optional(threshold) }),
});

// The analysis of a stored row, or null when the text is not one steward-control wrote.
export function readRunAnalysis(text: unknown): RunAnalysis | null {
  if (typeof text !== 'string' || text.length > 4096) return null;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  const r = runAnalysisSchema.safeParse(v);
  if (!r.success) return null;
  const thresholds: RunAnalysis['thresholds'] = {};
  for (const k of ['restartRate', 'livenessRate', 'errorRatio'] as const) if (r.data.thresholds[k] !== undefined) thresholds[k] = r.data.thresholds[k];
  return { mode: r.data.mode, windowMs: r.data.windowMs, thresholds };
}

// The flag name of a threshold key.
export const THRESHOLD_FLAG_NAMES: Record<ThresholdKey, string> = { restartRate: 'restart-rate', livenessRate: 'liveness-failures', errorRatio: 'error-ratio' };
