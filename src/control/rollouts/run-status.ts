// What `rollout status` shows of a run (docs/design.md §11): its policy, its status and halt reason, the
// counts, each node's state from the planner with the attempt it was issued and the verdict
// that answered it (its reason's message too), and the nodes behind (and ahead of) the app's
// last succeeded run.
import type { NodeState, PlanCounts, RunStatus } from '../../core/rollout-planner.js';
import type { ReceiptPayload } from '../../core/receipt-schema.js';
import type { ReceiptRow, RunRow, StoreReader } from '../store/store.js';
import { analysisView, type AnalysisView } from './analysis-view.js';
import { nodesOffVersion, type BehindNode } from './behind.js';
import { planRun } from './plan-run.js';

export interface RunNodeStatus {
  nodeId: string;
  // As the node enrolled; null for a node removed since.
  hostname: string | null;
  state: NodeState;
  reason: string | null;
  // 0: a canary; 1, 2, ...: its batch; null: not issued.
  batch: number | null;
  attemptId: string | null;
  issuedAt: number | null;
  notAfter: number | null;
  outcome: string | null;
  reasonCode: string | null;
  // The verdict's reason as the helper wrote it ("Failed to find executable node"), for a verdict
  // other than `active`; null otherwise.
  reasonMessage: string | null;
  receiptLost: number[];
}

export interface RunStatusView {
  id: number;
  app: string;
  version: string;
  status: RunStatus;
  startedAt: number;
  endedAt: number | null;
  stopped: boolean;
  paused: boolean;
  selector: string;
  canaries: number;
  namedCanaries: string[];
  canarySeed: number;
  // The nodes holding the canary role now.
  canaryNodes: string[];
  batch: string;
  batchSize: number;
  bakeMs: number;
  bakeUntil: number | null;
  maxFailures: number;
  failures: number;
  maxRefused: string;
  refusedLimit: number;
  // --max-fetch-failures as given, and what it tolerates in each batch issued so far.
  maxFetchFailures: string;
  fetchFailureLimits: Record<string, number>;
  verdictTimeoutMs: number;
  heartbeatIntervalMs: number;
  allowRetryReverted: boolean;
  windows: string[];
  tz: string;
  nextWindowAt: number | null;
  startAt: number | null;
  retryOf: number | null;
  retryBehind: boolean;
  haltReason: { code: string; nodeId: string | null; message: string } | null;
  // Why it is paused when its analysis paused it (ANALYSIS_INCONCLUSIVE), not an operator.
  pauseReason: { code: string; message: string } | null;
  // Its automated analysis (docs/design.md §19).
  analysis: AnalysisView;
  counts: PlanCounts & { behind: number };
  nodes: RunNodeStatus[];
  // Behind the app's last succeeded run (docs/design.md §11), whatever run this is.
  behind: BehindNode[];
  // Reporting a newer version than that run's: not behind, never asked to go back.
  ahead: BehindNode[];
  behindRunId: number | null;
}

// The status of one run at the store's time. An ended run keeps the status and halt reason
// recorded when it ended.
export async function describeRun(tx: StoreReader, run: RunRow): Promise<RunStatusView> {
  const now = await tx.now();
  const plan = await planRun(tx, run, now);
  const issued = new Map((await tx.runs.issued(run.id)).map((i) => [i.nodeId, i]));
  const all = await tx.nodes.list();
  const hostOf = new Map(all.map((n) => [n.nodeId, n.hostname]));
  const verdicts = new Map<string, { outcome: string; reasonCode: string | null; seq: number }>();
  for (const v of await tx.receipts.countingForRun(run.id)) {
    const cur = verdicts.get(v.attemptId);
    if (!cur || v.seq < cur.seq) verdicts.set(v.attemptId, v);
  }
  // The attempts whose download waits to be tried again, as their nodes last reported (heartbeat v6).
  const retrying = new Set<string>();
  for (const node of all) for (const a of node.apps) if (a.name === run.app && a.fetchRetrying) retrying.add(`${node.nodeId} ${a.fetchRetrying.attemptId}`);
  const nodes: RunNodeStatus[] = [];
  for (const [nodeId, n] of Object.entries(plan.nodes)) {
    const issue = issued.get(nodeId) ?? null;
    const verdict = issue ? verdicts.get(issue.attemptId) : undefined;
    nodes.push({
      nodeId,
      hostname: hostOf.get(nodeId) ?? null,
      state: n.state,
      // FETCH_RETRYING: issued, and its helper waits to try the download again (docs/design.md §18).
      reason: n.state === 'issued' && n.reason === null && issue && retrying.has(`${nodeId} ${issue.attemptId}`) ? 'FETCH_RETRYING' : n.reason,
      batch: n.batch,
      attemptId: issue?.attemptId ?? null,
      issuedAt: issue?.issuedAt ?? null,
      notAfter: issue?.notAfter ?? null,
      outcome: verdict?.outcome ?? null,
      reasonCode: verdict?.reasonCode ?? null,
      reasonMessage: verdict && issue && verdict.outcome !== 'active' ? await verdictMessage(tx, nodeId, run.app, issue.attemptId, verdict.seq) : null,
      receiptLost: await tx.receipts.gaps(nodeId),
    });
  }
  const ended = run.status !== 'running';
  const halt = ended
    ? run.haltCode
      ? { code: run.haltCode, nodeId: run.haltNodeId, message: run.haltMessage ?? '' }
      : null
    : plan.haltReason
      ? { code: plan.haltReason.code, nodeId: plan.haltReason.nodeId ?? null, message: plan.haltReason.message }
      : null;
  const succeeded = await tx.runs.lastSucceeded(run.app);
  const { behind, ahead } = succeeded ? await nodesOffVersion(tx, succeeded, all) : { behind: [], ahead: [] };
  return {
    id: run.id,
    app: run.app,
    version: run.version,
    status: ended ? run.status : plan.status,
    startedAt: run.startedAt,
    endedAt: run.endedAt,
    stopped: run.stopped,
    paused: run.paused,
    selector: run.selector,
    canaries: run.canaries,
    namedCanaries: run.namedCanaries,
    canarySeed: run.canarySeed,
    canaryNodes: plan.canaries,
    batch: run.batch,
    batchSize: plan.batchSize,
    bakeMs: run.bakeMs,
    bakeUntil: ended ? null : plan.bakeUntil,
    maxFailures: run.maxFailures,
    failures: plan.failures,
    maxRefused: run.maxRefused,
    refusedLimit: plan.refusedLimit,
    maxFetchFailures: run.maxFetchFailures,
    fetchFailureLimits: plan.fetchFailureLimits,
    verdictTimeoutMs: run.verdictTimeoutMs,
    heartbeatIntervalMs: run.heartbeatIntervalMs,
    allowRetryReverted: run.allowRetryReverted,
    windows: run.windows,
    tz: run.tz,
    nextWindowAt: ended ? null : plan.nextWindowAt,
    startAt: run.startAt,
    retryOf: run.retryOf,
    retryBehind: run.behind,
    haltReason: halt,
    pauseReason: !ended && plan.pauseReason ? { code: plan.pauseReason.code, message: plan.pauseReason.message } : null,
    analysis: analysisView(run, plan, await tx.runs.judgements(run.id)),
    counts: { ...plan.counts, behind: behind.length },
    nodes,
    behind,
    ahead,
    behindRunId: succeeded?.id ?? null,
  };
}

// The reason message of the receipt `seq` of `nodeId` for `attemptId` (read for the verdicts that
// are not `active` only: a run halts after a few of those, or its refusals are bounded).
async function verdictMessage(tx: StoreReader, nodeId: string, app: string, attemptId: string, seq: number): Promise<string | null> {
  const row = (await tx.receipts.list({ nodeId, app })).find((r) => r.seq === seq && r.attemptId === attemptId);
  return row ? reasonMessageOf(row) : null;
}

// The reason message a stored receipt's signed payload carries, or null.
export function reasonMessageOf(row: Pick<ReceiptRow, 'envelope'>): string | null {
  const payload = JSON.parse(Buffer.from(row.envelope.payload, 'base64').toString('utf8')) as ReceiptPayload;
  return payload.reason?.message ?? null;
}
