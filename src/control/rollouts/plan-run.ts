// Builds the pure planner's input for one run from the store (docs/design.md §11) and plans it.
import type { AnalysisFacts, NodeFacts, Plan, PlanInput, RevertFact, RolloutRun, VerdictFact } from '../../core/rollout-planner.js';
import { planRollout } from '../../core/rollout-planner.js';
import type { HeartbeatApp } from '../../core/heartbeat-schema.js';
import { appDelegation } from '../trust/repository.js';
import type { IssuedRow, JudgementRow, ReceiptFact, RunRow, StoreReader } from '../store/store.js';
import { plannerPolicy } from './run-options.js';

// The planner's view of a run row.
export function toRolloutRun(row: Omit<RunRow, 'id'> & { id: number | null }): RolloutRun {
  return {
    id: String(row.id ?? 'dry-run'),
    app: row.app,
    version: row.version,
    startedAt: row.startedAt,
    heartbeatIntervalMs: row.heartbeatIntervalMs,
    stopped: row.stopped,
    paused: row.paused,
    policy: plannerPolicy(row),
  };
}

// A node's facts for the planner: frozen at the start (its heartbeat, whether it listed the
// app), reported now (its version and supervisor), the versions it reverted before, and since
// when its heartbeats are refused for clock skew, now.
export function nodeFacts(
  n: { nodeId: string; lastHeartbeatAt: number | null; listedApp: boolean; app: HeartbeatApp | null; clockSkewRefusedSince: number | null },
  reverts: readonly ReceiptFact[],
): NodeFacts {
  return {
    nodeId: n.nodeId,
    lastHeartbeatAt: n.lastHeartbeatAt,
    listedApp: n.listedApp,
    current: n.app?.current ?? null,
    supervisor: n.app ? { state: n.app.supervisor.state, since: n.app.supervisor.since } : null,
    revertedVersions: [...new Set(reverts.flatMap((r) => (r.targetVersion === null ? [] : [r.targetVersion])))],
    clockSkewRefusedSince: n.clockSkewRefusedSince,
  };
}

// The reverts as the planner takes them: at the time the control plane received them.
export function revertFacts(reverts: readonly ReceiptFact[]): RevertFact[] {
  return reverts.map((r) => ({ nodeId: r.nodeId, attemptId: r.attemptId, outcome: r.outcome as RevertFact['outcome'], reasonCode: r.reasonCode, at: r.receivedAt }));
}

// The counting receipts as verdicts: the helper's signed time, but never before the issue nor
// after the control plane saw it, so a node clock that is off cannot move a verdict out of (or
// into) the timeout.
export function verdictFacts(issued: readonly IssuedRow[], receipts: readonly ReceiptFact[]): VerdictFact[] {
  const issuedAt = new Map(issued.map((i) => [i.attemptId, i.issuedAt]));
  return receipts.map((r) => ({
    nodeId: r.nodeId,
    attemptId: r.attemptId,
    outcome: r.outcome,
    reasonCode: r.reasonCode,
    at: clamp(r.updatedAt, issuedAt.get(r.attemptId) ?? r.receivedAt, r.receivedAt),
  }));
}

// The planner's input for `run` at `now`.
export async function readPlanInput(tx: StoreReader, run: RunRow, now: number): Promise<PlanInput> {
  const issued = await tx.runs.issued(run.id);
  const reverts = await tx.receipts.revertsForRun(run.id, run.app);
  const byNode = new Map<string, ReceiptFact[]>();
  for (const r of reverts) byNode.set(r.nodeId, [...(byNode.get(r.nodeId) ?? []), r]);
  const nodes = (await tx.runs.nodes(run.id)).map((n) => nodeFacts(n, byNode.get(n.nodeId) ?? []));
  const verdicts = verdictFacts(issued, await tx.receipts.countingForRun(run.id));
  const analysis = run.analysis.mode === 'off' ? undefined : analysisFacts(run, await tx.runs.judgements(run.id));
  // The app's TUF delegation, whose keys a DOWNGRADE_REFUSED halt names: read (the top-level
  // targets parsed) only when a node refused so, not at every tick of every run.
  const downgradeSigners = verdicts.some((v) => v.reasonCode === 'DOWNGRADE_REFUSED') ? await appDelegation(tx, run.app) : null;
  return { run: toRolloutRun(run), nodes, issued, verdicts, reverts: revertFacts(reverts), now, ...(analysis ? { analysis } : {}), ...(downgradeSigners ? { downgradeSigners } : {}) };
}

// The analysis as the planner takes it (docs/design.md §19): the run's mode and window, and each
// step's recorded judgement. A judgement recorded in observe never decides, whatever the mode.
export function analysisFacts(run: Pick<RunRow, 'analysis'>, judgements: readonly JudgementRow[]): AnalysisFacts {
  return {
    mode: run.analysis.mode,
    windowMs: run.analysis.windowMs,
    judgements: judgements.map((j) => ({ step: j.step, verdict: j.mode === 'enforce' ? j.verdict : 'pass', at: j.at, summary: j.judgement.summary, resumed: j.resumedAt !== null })),
  };
}

// The plan of `run` at `now`.
export async function planRun(tx: StoreReader, run: RunRow, now: number): Promise<Plan> {
  return planRollout(await readPlanInput(tx, run, now));
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(Math.max(v, lo), Math.max(lo, hi));
}
