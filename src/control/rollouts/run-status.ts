// What `rollout status` shows of a run: its settings, recorded status and halt reason, and each
// node's state from the planner with the attempt it was issued and the verdict that answered it.
import type { NodeState } from '../../core/rollout-planner.js';
import type { RunRow, StoreReader } from '../store/store.js';
import { planRun } from './plan-run.js';

export interface RunNodeStatus {
  nodeId: string;
  state: NodeState;
  attemptId: string | null;
  issuedAt: number | null;
  outcome: string | null;
  reasonCode: string | null;
  receiptLost: number[];
}

export interface RunStatusView {
  id: number;
  app: string;
  version: string;
  status: 'running' | 'succeeded' | 'halted' | 'stopped';
  startedAt: number;
  endedAt: number | null;
  stopped: boolean;
  canary: string | null;
  requestedCanary: string | null;
  batchSize: number;
  verdictTimeoutMs: number;
  heartbeatIntervalMs: number;
  allowRetryReverted: boolean;
  haltReason: { code: string; nodeId: string | null; message: string } | null;
  nodes: RunNodeStatus[];
}

// The status of one run at the store's time. An ended run keeps the status and halt reason recorded when it ended.
export async function describeRun(tx: StoreReader, run: RunRow): Promise<RunStatusView> {
  const now = await tx.now();
  const plan = await planRun(tx, run, now);
  const issued = await tx.runs.issued(run.id);
  const verdicts = await tx.receipts.countingForRun(run.id);
  const gaps = new Map<string, number[]>();
  for (const nodeId of Object.keys(plan.nodes)) gaps.set(nodeId, await tx.receipts.gaps(nodeId));
  const nodes = Object.keys(plan.nodes).map((nodeId): RunNodeStatus => {
    const issue = issued.find((i) => i.nodeId === nodeId) ?? null;
    const verdict = issue ? verdicts.filter((v) => v.attemptId === issue.attemptId && v.nodeId === nodeId).sort((a, b) => a.seq - b.seq)[0] : undefined;
    return {
      nodeId,
      state: plan.nodes[nodeId] as NodeState,
      attemptId: issue?.attemptId ?? null,
      issuedAt: issue?.issuedAt ?? null,
      outcome: verdict?.outcome ?? null,
      reasonCode: verdict?.reasonCode ?? null,
      receiptLost: gaps.get(nodeId) ?? [],
    };
  });
  const ended = run.status !== 'running';
  const halt = ended
    ? run.haltCode
      ? { code: run.haltCode, nodeId: run.haltNodeId, message: run.haltMessage ?? '' }
      : null
    : plan.haltReason
      ? { code: plan.haltReason.code, nodeId: plan.haltReason.nodeId ?? null, message: plan.haltReason.message }
      : null;
  return {
    id: run.id,
    app: run.app,
    version: run.version,
    status: ended ? run.status : plan.status,
    startedAt: run.startedAt,
    endedAt: run.endedAt,
    stopped: run.stopped,
    canary: plan.canary,
    requestedCanary: run.namedCanaries[0] ?? null,
    batchSize: Number(run.batch) || 1,
    verdictTimeoutMs: run.verdictTimeoutMs,
    heartbeatIntervalMs: run.heartbeatIntervalMs,
    allowRetryReverted: run.allowRetryReverted,
    haltReason: halt,
    nodes,
  };
}
