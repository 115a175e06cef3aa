// The ticker's side of the analysis (docs/design.md §19): a run's plan names the steps whose window
// has passed and that no judgement answers yet (plan.analysisDue); each is judged here, outside
// any transaction (judgeStep reads the signal samples on its own), then recorded with its audit
// entry in the run's own transaction under its advance lock, and the run advanced at once, so
// that an enforced fail halts it and an inconclusive pauses it in the same commit. The planner
// stays pure: the judgement is one more fact it reads.
import type { AnalysisDue } from '../../core/rollout-planner.js';
import { stepName } from '../../core/rollout-planner.js';
import type { RunAnalysis } from '../../core/run-analysis.js';
import { logger } from '../../platform/log.js';
import { judgeStep } from '../analysis/judge-step.js';
import type { Judgement } from '../analysis/judgement.js';
import { DEFAULT_THRESHOLDS, type AnalysisPolicy } from '../analysis/policy.js';
import { recordAudit } from '../audit/record-audit.js';
import { emitRunEvent } from '../hooks/run-events.js';
import type { ControlStore, RunRow, StoreTx } from '../store/store.js';
import { SYSTEM_ACTOR } from '../targets/pins.js';
import { advanceRun } from './advance-runs.js';
import { readJudgementSeries, type JudgementSeries } from './judgement-series.js';

const log = logger('control:rollouts:analysis');

// The judgement seam: the real one reads the store's samples; tests and the bench pass their own
// or wrap it (to count its CPU).
export type JudgeStep = typeof judgeStep;

// The judgement's policy for a run's recorded analysis: its thresholds over the defaults.
export function analysisPolicyOf(a: RunAnalysis): AnalysisPolicy {
  return { mode: a.mode, windowMs: a.windowMs, thresholds: { ...DEFAULT_THRESHOLDS, ...a.thresholds } };
}

// What a judgement would have done in enforce, for observe's record: halted, paused, or nothing.
export function wouldHave(verdict: Judgement['verdict']): 'halted' | 'paused' | null {
  return verdict === 'fail' ? 'halted' : verdict === 'inconclusive' ? 'paused' : null;
}

// Judges the due steps of `run` and records each (the first judgement of a step wins: another
// instance may have judged it meanwhile). Answers how many it recorded. A judgement that throws
// is logged and tried again at the next tick; nothing is recorded for it.
export async function judgeDueSteps(store: ControlStore, run: RunRow, due: readonly AnalysisDue[], judge: JudgeStep = judgeStep): Promise<number> {
  if (run.analysis.mode === 'off' || due.length === 0) return 0;
  const judged: Array<{ due: AnalysisDue; judgement: Judgement & { series: JudgementSeries } }> = [];
  for (const d of due) {
    try {
      const judgement = await judge(store, {
        app: run.app,
        canaryNodeIds: d.canary,
        baselineNodeIds: d.baseline,
        from: new Date(d.from),
        to: new Date(d.to),
        policy: analysisPolicyOf(run.analysis),
        canaryVersion: run.version,
      });
      // The charts' series: the same window's samples, read once more (one read per step).
      const series = await readJudgementSeries(store, run.app, d.canary, d.baseline, d.from, d.to, run.version);
      judged.push({ due: d, judgement: { ...judgement, series } });
    } catch (err) {
      log('judgement of run=%d step=%d failed: %s', run.id, d.step, (err as Error)?.message ?? String(err));
    }
  }
  if (judged.length === 0) return 0;
  return store.write(async (tx) => {
    await tx.runs.lock(run.id);
    const now = await tx.now();
    const current = await tx.runs.get(run.id);
    if (!current || current.status !== 'running') return 0;
    let recorded = 0;
    for (const { due: d, judgement } of judged) {
      if (await recordJudgement(tx, current, d, judgement, now)) recorded++;
    }
    if (recorded > 0) await advanceRun(tx, run.id);
    return recorded;
  });
}

// Records one step's judgement and its audit entry, unless the step has one already.
async function recordJudgement(tx: StoreTx, run: RunRow, d: AnalysisDue, j: Judgement & { series: JudgementSeries }, now: number): Promise<boolean> {
  const mode = run.analysis.mode === 'enforce' ? 'enforce' : 'observe';
  const inserted = await tx.runs.insertJudgement({ runId: run.id, step: d.step, at: now, mode, verdict: j.verdict, from: d.from, to: d.to, judgement: j });
  if (!inserted) return false;
  const would = wouldHave(j.verdict);
  const effect = mode === 'enforce' ? (would ?? 'went on') : would ? `would have ${would}` : 'would have gone on';
  await recordAudit(tx, SYSTEM_ACTOR, 'rollout.analysis', `${run.app}@${run.version}`, {
    runId: run.id,
    step: d.step,
    mode,
    verdict: j.verdict,
    effect,
    from: new Date(d.from).toISOString(),
    to: new Date(d.to).toISOString(),
    canaryNodes: d.canary.length,
    baselineNodes: d.baseline.length,
    summary: j.summary,
    signals: j.signals.map((s) => ({ signal: s.signal, verdict: s.verdict, canary: s.canary, baseline: s.baseline, why: s.why })),
  });
  log('run=%d app=%s version=%s %s judged %s (%s, %s): %s', run.id, run.app, run.version, stepName(d.step), j.verdict, mode, effect, j.summary);
  // An enforced inconclusive pauses the run without its paused flag: told here, in the same commit
  // (a fail halts it, and advanceRun tells that).
  if (mode === 'enforce' && j.verdict === 'inconclusive') await emitRunEvent(tx, 'run.paused', run.id, { code: 'ANALYSIS_INCONCLUSIVE', message: j.summary });
  return true;
}
