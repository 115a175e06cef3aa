// Each signal per cohort, minute by minute over a judged window (docs/design.md §19): what the
// dashboard's small charts draw beside a step's judgement. Read once, when the step is judged, from
// the same samples (the store keeps them two windows at most), and stored with the judgement: at most
// 60 points per signal and cohort. A minute's point pools its cohort's increases (resets counted
// as the judgement counts them, src/control/analysis/node-increase.ts): restarts and liveness
// failures per node-hour, errors per request; null where no node had two samples.
import { nodeIncrease } from '../analysis/node-increase.js';
import type { SignalName } from '../store/judgement-record.js';
import type { ControlStore, SignalSample } from '../store/store.js';

const MINUTE = 60_000;
const HOUR = 3_600_000;
export const MAX_SERIES_POINTS = 60;

export interface CohortSeries {
  canary: Array<number | null>;
  baseline: Array<number | null>;
}

export type JudgementSeries = Record<SignalName, CohortSeries>;

interface Bucket {
  spanMs: number;
  restarts: number;
  liveness: number;
  requests: number;
  errors: number;
}

// The series of one cohort's samples (by nodeId then time, as the store gives them) over [from, to).
export function cohortSeries(samples: readonly SignalSample[], from: number, to: number, version?: string): Record<SignalName, Array<number | null>> {
  const n = Math.min(MAX_SERIES_POINTS, Math.max(1, Math.ceil((to - from) / MINUTE)));
  const buckets: Bucket[] = Array.from({ length: n }, () => ({ spanMs: 0, restarts: 0, liveness: 0, requests: 0, errors: 0 }));
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1]!;
    const b = samples[i]!;
    if (a.nodeId !== b.nodeId) continue;
    const inc = nodeIncrease([a, b], version);
    if (!inc) continue;
    const k = Math.min(n - 1, Math.max(0, Math.floor((b.at - from) / MINUTE)));
    const bucket = buckets[k]!;
    bucket.spanMs += inc.spanMs;
    bucket.restarts += inc.restarts;
    bucket.liveness += inc.livenessFailures;
    if (inc.requests !== null && inc.errors !== null) {
      bucket.requests += inc.requests;
      bucket.errors += Math.min(inc.errors, inc.requests);
    }
  }
  const per = (f: (b: Bucket) => number) => buckets.map((b) => (b.spanMs > 0 ? f(b) / (b.spanMs / HOUR) : null));
  return {
    'restart-rate': per((b) => b.restarts),
    'liveness-failures': per((b) => b.liveness),
    'error-ratio': buckets.map((b) => (b.requests > 0 ? b.errors / b.requests : null)),
  };
}

// Reads both cohorts' samples of the window and makes their series.
export async function readJudgementSeries(store: ControlStore, app: string, canary: readonly string[], baseline: readonly string[], from: number, to: number, version: string): Promise<JudgementSeries> {
  const [c, b] = await store.read(async (tx) => [await tx.signals.window(app, canary, from, to), await tx.signals.window(app, baseline, from, to)]);
  const cs = cohortSeries(c, from, to, version);
  const bs = cohortSeries(b, from, to);
  const out = {} as JudgementSeries;
  for (const s of ['restart-rate', 'liveness-failures', 'error-ratio'] as const) out[s] = { canary: cs[s], baseline: bs[s] };
  return out;
}
