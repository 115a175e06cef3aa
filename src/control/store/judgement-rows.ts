// Reading a run's analysis column and its judgements' rows, the same on both stores
// (docs/design.md §19). Nothing read is trusted: an unreadable analysis turns it off for the run
// (it judges nothing rather than deciding on a policy nobody set), an unreadable judgement is
// inconclusive.
import { ANALYSIS_OFF, readRunAnalysis, type RunAnalysis } from '../../core/run-analysis.js';
import { readStoredJudgement } from './judgement-record.js';
import type { JudgementRow } from './store.js';

export interface JudgementRaw {
  runId: number;
  step: number;
  at: number;
  mode: string;
  verdict: string;
  windowFrom: number;
  windowTo: number;
  judgement: string;
  resumedAt: number | null;
  resumedBy: string | null;
}

// A run's analysis: null (a run from before schema 11) or unreadable is off.
export function runAnalysisOf(text: string | null): RunAnalysis {
  return text === null ? ANALYSIS_OFF : (readRunAnalysis(text) ?? ANALYSIS_OFF);
}

export function judgementRow(r: JudgementRaw): JudgementRow {
  const verdict = r.verdict === 'pass' || r.verdict === 'fail' ? r.verdict : 'inconclusive';
  return {
    runId: Number(r.runId),
    step: Number(r.step),
    at: Number(r.at),
    mode: r.mode === 'enforce' ? 'enforce' : 'observe',
    verdict,
    from: Number(r.windowFrom),
    to: Number(r.windowTo),
    judgement: readStoredJudgement(r.judgement, Number(r.at)),
    resumedAt: r.resumedAt === null ? null : Number(r.resumedAt),
    resumedBy: r.resumedBy,
  };
}
