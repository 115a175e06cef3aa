// A step's judgement as the run_judgements table keeps it (docs/design.md §19): the analysis's
// Judgement, checked whenever it is read (the database is not trusted to hold only what
// steward-control wrote). One that does not check reads as an inconclusive judgement saying so,
// never as a pass.
import * as z from '../../core/zod-mini.js';
import { parseJson } from './parse-json.js';

export type JudgementVerdict = 'pass' | 'fail' | 'inconclusive';
export type SignalName = 'restart-rate' | 'liveness-failures' | 'error-ratio';

export interface StoredCohort {
  nodes: number;
  value: number | null;
  sample: number;
}

export interface StoredSignal {
  signal: SignalName;
  verdict: JudgementVerdict;
  canary: StoredCohort;
  baseline: StoredCohort;
  why: string;
}

// Each signal per cohort, a point a minute over the window (src/control/rollouts/judgement-series.ts).
export type StoredSeries = Record<SignalName, { canary: Array<number | null>; baseline: Array<number | null> }>;

// The analysis's Judgement (src/control/analysis), as stored, with the series the dashboard draws.
export interface StoredJudgement {
  verdict: JudgementVerdict;
  from: string;
  to: string;
  signals: StoredSignal[];
  summary: string;
  series?: StoredSeries;
}

const verdict = z.enum(['pass', 'fail', 'inconclusive']);
const figure = z.nullable(z.number().check(z.minimum(-1e15), z.maximum(1e15)));
const count = z.number().check(z.minimum(0), z.maximum(1e15));
const cohort = z.object({ nodes: count, value: figure, sample: count });
const text = (n: number) => z.string().check(z.maxLength(n));

const points = z.array(figure).check(z.maxLength(60));
const pair = z.object({ canary: points, baseline: points });
const seriesSchema = z.object({ 'restart-rate': pair, 'liveness-failures': pair, 'error-ratio': pair });

const judgementSchema = z.object({
  verdict,
  from: text(64),
  to: text(64),
  signals: z
    .array(z.object({ signal: z.enum(['restart-rate', 'liveness-failures', 'error-ratio']), verdict, canary: cohort, baseline: cohort, why: text(2048) }))
    .check(z.maxLength(16)),
  summary: text(4096),
  series: z.optional(seriesSchema),
});

// The judgement in a stored row; an unreadable one is inconclusive and says why.
export function readStoredJudgement(raw: unknown, at: number): StoredJudgement {
  const r = judgementSchema.safeParse(parseJson<unknown>(raw, null));
  if (r.success) {
    return {
      verdict: r.data.verdict,
      from: r.data.from,
      to: r.data.to,
      summary: r.data.summary,
      signals: r.data.signals.map((s) => ({ signal: s.signal, verdict: s.verdict, canary: pick(s.canary), baseline: pick(s.baseline), why: s.why })),
      ...(r.data.series ? { series: seriesOf(r.data.series) } : {}),
    };
  }
  const when = new Date(at).toISOString();
  return { verdict: 'inconclusive', from: when, to: when, signals: [], summary: 'the stored judgement is not one steward-control wrote' };
}

const seriesOf = (s: StoredSeries): StoredSeries => ({
  'restart-rate': { canary: [...s['restart-rate'].canary], baseline: [...s['restart-rate'].baseline] },
  'liveness-failures': { canary: [...s['liveness-failures'].canary], baseline: [...s['liveness-failures'].baseline] },
  'error-ratio': { canary: [...s['error-ratio'].canary], baseline: [...s['error-ratio'].baseline] },
});

const pick = (c: StoredCohort): StoredCohort => ({ nodes: c.nodes, value: c.value, sample: c.sample });

// The text a judgement is stored as: only the fields above (whatever else the analysis adds stays out).
export function judgementText(j: StoredJudgement): string {
  return JSON.stringify({
    verdict: j.verdict,
    from: j.from,
    to: j.to,
    summary: j.summary.slice(0, 4096),
    signals: j.signals.slice(0, 16).map((s) => ({ signal: s.signal, verdict: s.verdict, canary: pick(s.canary), baseline: pick(s.baseline), why: s.why.slice(0, 2048) })),
    ...(j.series ? { series: seriesOf(j.series) } : {}),
  });
}
