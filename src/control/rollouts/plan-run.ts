// Builds the pure planner's input for one run from the store (DESIGN §9) and plans it.
import { planRollout, type NodeFacts, type Plan, type PlanInput, type VerdictFact } from '../../core/rollout-planner.js';
import type { HeartbeatApp } from '../../core/heartbeat-schema.js';
import type { ControlStore } from '../store/open-store.js';
import { countingReceiptsFor, revertedVersions } from '../store/receipts.js';
import { issuedFor, runNodes, toRolloutRun, type RunRow } from '../store/runs.js';

// The planner's input for `run` at `now`: each node's heartbeat as of the run's start (from the
// run's snapshot), its reported version, the versions it reverted (any receipt, any run), the
// run's issues and the counting receipts answering them.
export function readPlanInput(store: ControlStore, run: RunRow, now: number): PlanInput {
  const issued = issuedFor(store, run.id);
  const issuedAt = new Map(issued.map((i) => [i.attemptId, i.issuedAt]));
  const nodes: NodeFacts[] = runNodes(store, run.id).map((n) => ({
    nodeId: n.nodeId,
    lastHeartbeatAt: n.lastHeartbeatAt,
    current: currentVersion(n.apps, run.app),
    revertedVersions: revertedVersions(store, n.nodeId, run.app),
  }));
  const verdicts: VerdictFact[] = countingReceiptsFor(store, issued.map((i) => i.attemptId)).map((r) => ({
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
export function planRun(store: ControlStore, run: RunRow, now: number): Plan {
  return planRollout(readPlanInput(store, run, now));
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(Math.max(v, lo), Math.max(lo, hi));
}

function currentVersion(appsJson: string, app: string): string | null {
  try {
    const apps = JSON.parse(appsJson) as HeartbeatApp[];
    return (Array.isArray(apps) ? apps.find((a) => a?.name === app)?.current : null) ?? null;
  } catch {
    return null;
  }
}
