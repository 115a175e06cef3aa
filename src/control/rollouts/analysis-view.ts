// What `rollout status`, `target status` and the dashboard show of a run's analysis (docs/design.md
// §19): its mode, window and thresholds, the step it waits for (and when that window ends), and
// each step's window with its judgement: the verdict, what it did or would have done, the summary
// and each signal's figures per cohort.
import type { Plan } from '../../core/rollout-planner.js';
import type { AnalysisMode } from '../../core/rollout-planner.js';
import type { AnalysisThresholds } from '../analysis/policy.js';
import type { StoredSeries, StoredSignal } from '../store/judgement-record.js';
import type { JudgementRow, RunRow } from '../store/store.js';
import { analysisPolicyOf, wouldHave } from './judge-steps.js';

export interface AnalysisStepView {
  // 0: the canaries; then each batch.
  step: number;
  // The window: from the step's last confirmation, for --analysis-window.
  from: number;
  to: number;
  // Null until judged.
  verdict: 'pass' | 'fail' | 'inconclusive' | null;
  judgedAt: number | null;
  // The mode it was judged in, and what it did (enforce: halted, paused, went on) or would have
  // done (observe: "would have halted", "would have paused", "would have gone on").
  mode: 'observe' | 'enforce' | null;
  effect: string | null;
  summary: string | null;
  signals: StoredSignal[];
  // Each signal per cohort, a point a minute over the window (null: no data that minute).
  series: StoredSeries | null;
  // An operator resumed the run after this (inconclusive) judgement.
  resumedAt: number | null;
  resumedBy: string | null;
}

export interface AnalysisView {
  mode: AnalysisMode;
  windowMs: number;
  // Every threshold, the defaults filled in.
  thresholds: AnalysisThresholds;
  // While the next step waits for the analysis of the last one (enforce): that step, and when its
  // window ends (a past time: its judgement is being made).
  waiting: { step: number; from: number; until: number } | null;
  steps: AnalysisStepView[];
}

// The view of `run`'s analysis from its plan (the windows) and its recorded judgements.
export function analysisView(run: Pick<RunRow, 'analysis' | 'status'>, plan: Pick<Plan, 'analysisSteps' | 'analysisWait'>, judgements: readonly JudgementRow[]): AnalysisView {
  const byStep = new Map<number, AnalysisStepView>();
  for (const s of plan.analysisSteps) byStep.set(s.step, blank(s.step, s.from, s.to));
  for (const j of judgements) {
    const would = wouldHave(j.verdict);
    byStep.set(j.step, {
      ...blank(j.step, j.from, j.to),
      verdict: j.verdict,
      judgedAt: j.at,
      mode: j.mode,
      effect: j.mode === 'enforce' ? (would ?? 'went on') : would ? `would have ${would}` : 'would have gone on',
      summary: j.judgement.summary,
      signals: j.judgement.signals,
      series: j.judgement.series ?? null,
      resumedAt: j.resumedAt,
      resumedBy: j.resumedBy,
    });
  }
  const policy = analysisPolicyOf(run.analysis);
  return {
    mode: run.analysis.mode,
    windowMs: run.analysis.windowMs,
    thresholds: policy.thresholds,
    waiting: run.status === 'running' ? plan.analysisWait : null,
    steps: [...byStep.values()].sort((a, b) => a.step - b.step),
  };
}

const blank = (step: number, from: number, to: number): AnalysisStepView => ({
  step, from, to, verdict: null, judgedAt: null, mode: null, effect: null, summary: null, signals: [], series: null, resumedAt: null, resumedBy: null,
});
