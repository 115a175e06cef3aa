// Builds the pure planner's input for one run from the store (DESIGN §9) and plans it.
import { planRollout, type NodeFacts, type Plan, type PlanInput, type RolloutRun, type VerdictFact } from '../../core/rollout-planner.js';
import type { RunRow, StoreReader } from '../store/store.js';

// The planner's view of a run row.
export function toRolloutRun(row: RunRow): RolloutRun {
  return {
    id: String(row.id),
    app: row.app,
    version: row.version,
    startedAt: row.startedAt,
    canary: row.namedCanaries[0] ?? null,
    batchSize: Number(row.batch) || 1,
    verdictTimeoutMs: row.verdictTimeoutMs,
    allowRetryReverted: row.allowRetryReverted,
    heartbeatIntervalMs: row.heartbeatIntervalMs,
    stopped: row.stopped,
  };
}

// The planner's input for `run` at `now`: each node's heartbeat as of the run's start (from the
// run's snapshot), its reported version, the versions it reverted (any receipt, any run), the
// run's issues and the counting receipts answering them.
export async function readPlanInput(tx: StoreReader, run: RunRow, now: number): Promise<PlanInput> {
  const issued = await tx.runs.issued(run.id);
  const issuedAt = new Map(issued.map((i) => [i.attemptId, i.issuedAt]));
  const reverted = new Map<string, string[]>();
  for (const r of await tx.receipts.revertsForRun(run.id, run.app)) {
    if (r.targetVersion !== null) reverted.set(r.nodeId, [...(reverted.get(r.nodeId) ?? []), r.targetVersion]);
  }
  const nodes: NodeFacts[] = (await tx.runs.nodes(run.id)).map((n) => ({
    nodeId: n.nodeId,
    lastHeartbeatAt: n.lastHeartbeatAt,
    current: n.app?.current ?? null,
    revertedVersions: reverted.get(n.nodeId) ?? [],
  }));
  const verdicts: VerdictFact[] = (await tx.receipts.countingForRun(run.id)).map((r) => ({
    nodeId: r.nodeId,
    attemptId: r.attemptId,
    outcome: r.outcome,
    reasonCode: r.reasonCode,
    // The helper's signed time, but never before the issue nor after the control plane saw it:
    // a node clock that is off cannot move a verdict out of (or into) the timeout.
    at: clamp(r.updatedAt, issuedAt.get(r.attemptId) ?? r.receivedAt, r.receivedAt),
  }));
  return { run: toRolloutRun(run), nodes, issued, verdicts, now };
}

// The plan of `run` at `now`.
export async function planRun(tx: StoreReader, run: RunRow, now: number): Promise<Plan> {
  return planRollout(await readPlanInput(tx, run, now));
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(Math.max(v, lo), Math.max(lo, hi));
}
