// The rollout planner of docs/design.md §9 and §11, pure: a run's policy, the facts recorded about its
// nodes, the attempts it issued, the verified receipts that answer them and the clock go in;
// every node's state, the run's status and the nodes to issue the version to now come out.
// No I/O, no Date.now: calling it twice with the same input gives the same plan. The dry run
// (rollout-simulate.ts) and the control plane both decide through it.
import { allowDowngradeRemedy, type DowngradeSigners } from './downgrade-limits.js';
import { HOST_TRUST_CODES, RELEASE_PROBLEM_CODES } from './errors.js';
import { heartbeatFresh } from './heartbeat-freshness.js';
import { batchSizeOf, formatAmount, pickCanaries, refusalLimitOf, type Amount } from './rollout-policy.js';
import { windowAt, type RolloutWindow } from './windows.js';

export interface RolloutPolicy {
  // Canaries to confirm (and bake) before the first batch: at least the named ones.
  canaries: number;
  namedCanaries: string[];
  // The seed of the random canary order, recorded in the run.
  canarySeed: number;
  batch: Amount;
  bakeMs: number;
  // Failed nodes beyond the canaries tolerated; the next one halts. failuresCarried: spent by
  // the run a retry continues.
  maxFailures: number;
  failuresCarried: number;
  maxRefused: Amount;
  // Nodes of one batch that may fail to fetch the artifact (FETCH_FAILED) before the run halts
  // TOO_MANY_FETCH_FAILURES (docs/design.md §18): a percentage of the batch's issued nodes,
  // rounded down.
  maxFetchFailures: Amount;
  verdictTimeoutMs: number;
  allowRetryReverted: boolean;
  windows: RolloutWindow[];
  tz: string;
  startAt: number | null;
}

export interface RolloutRun {
  id: string;
  app: string;
  version: string;
  startedAt: number;
  heartbeatIntervalMs: number;
  stopped: boolean;
  paused: boolean;
  policy: RolloutPolicy;
}

export interface NodeFacts {
  nodeId: string;
  // Frozen at the run's start: the node's last heartbeat then, and whether it listed the app.
  lastHeartbeatAt: number | null;
  listedApp: boolean;
  // Its report now: the version of the app it runs, its supervisor.
  current: string | null;
  supervisor: { state: string; since: number | null } | null;
  // Versions of the app it rolled back or failed before, from verified receipts.
  revertedVersions: string[];
  // Now: since when the control plane refuses its heartbeats for clock skew (its latest one was
  // refused so, after its last accepted one), or null. A node it refuses since before the run's
  // start is skipped for CLOCK_SKEW, not NO_RECENT_HEARTBEAT; one the run waits for says so too.
  clockSkewRefusedSince: number | null;
}

// One attempt this run issued (at most one per node). The caller makes the attemptId and
// records the issue, with its window's end and its batch (0: the canaries), before sending it.
export interface Issued {
  nodeId: string;
  attemptId: string;
  issuedAt: number;
  notAfter: number | null;
  batch: number;
}

// A verified receipt carrying an attemptId this run issued; others are ignored.
export interface VerdictFact {
  nodeId: string;
  attemptId: string;
  outcome: 'active' | 'rolled-back' | 'failed' | 'refused';
  reasonCode: string | null;
  at: number;
}

// A `rolled-back` or `failed` receipt of the run's app from one of its nodes, of any attempt,
// at the time it was received: within a confirmed node's bake it counts against the budget.
export interface RevertFact {
  nodeId: string;
  attemptId: string;
  outcome: 'rolled-back' | 'failed';
  reasonCode: string | null;
  at: number;
}

export interface PlanInput {
  run: RolloutRun;
  nodes: NodeFacts[];
  issued: Issued[];
  verdicts: VerdictFact[];
  reverts: RevertFact[];
  now: number;
  // The run's automated analysis (docs/design.md §19) and the judgements recorded so far; absent: off.
  analysis?: AnalysisFacts;
  // The app's TUF delegation when the fleet's repository delegates it: a DOWNGRADE_REFUSED halt
  // then names a threshold of its keys for `release allow-downgrade`; absent: one release key.
  downgradeSigners?: DowngradeSigners | null;
}

// off: no judgement. observe: each step is judged and recorded, nothing waits or halts.
// enforce: the next step waits for the last one's window and a judgement that passes; a fail
// halts ANALYSIS_FAILED, an inconclusive pauses ANALYSIS_INCONCLUSIVE until an operator resumes.
export type AnalysisMode = 'off' | 'observe' | 'enforce';

// A judgement the control plane recorded for one step of the run (0: the canaries). The
// judgement itself is made outside the planner, by the ticker (src/control/rollouts/judge-steps.ts),
// from the signals in the store: the planner only decides from its verdict.
export interface StepJudgementFact {
  step: number;
  verdict: 'pass' | 'fail' | 'inconclusive';
  at: number;
  // One line naming the failing signal and both cohorts' figures.
  summary: string;
  // An operator resumed the run after this judgement (an inconclusive then lets the next step go).
  resumed: boolean;
}

export interface AnalysisFacts {
  mode: AnalysisMode;
  windowMs: number;
  judgements: StepJudgementFact[];
}

// A step whose analysis window has passed and that no judgement answers yet: the ticker judges
// its confirmed nodes (the canary cohort) against the run's nodes still pending (the baseline:
// the same selection, still on the old version) over [from, to].
export interface AnalysisDue {
  step: number;
  from: number;
  to: number;
  canary: string[];
  baseline: string[];
}

// A step of the run that is analysed (it converged with a confirmation and a step follows it):
// its window, and its judgement's verdict once recorded.
export interface AnalysisStep {
  step: number;
  from: number;
  to: number;
  verdict: StepJudgementFact['verdict'] | null;
}

// not-targeted: selected, but its heartbeat at the start did not list the app. skipped: stale at
// the start. pending: a target not issued yet. issued: waiting for its verdict. confirmed: a
// signed `active` for this run's attempt. already-current: it reported the version, no attempt.
// refused: a refusal (a release problem halts). failed: it could not fetch the artifact
// (FETCH_FAILED, the node's trouble, not the release's): counted in the budget. reverted: `rolled-back` or `failed`, or so
// during its bake. timed-out: no verdict within the timeout. excluded-reverted: it reverted this
// version before and the run does not allow a retry.
export type NodeState =
  | 'not-targeted'
  | 'skipped'
  | 'pending'
  | 'issued'
  | 'confirmed'
  | 'already-current'
  | 'refused'
  | 'failed'
  | 'reverted'
  | 'timed-out'
  | 'excluded-reverted';

export interface NodePlan {
  state: NodeState;
  // Why, as a code: APP_NOT_ON_NODE, NO_RECENT_HEARTBEAT, CLOCK_SKEW, REPORTED, REVERTED_BEFORE,
  // the receipt's reason code, TIMED_OUT, SUPERVISOR_ERROR. CLOCK_SKEW: skipped, or pending or
  // issued while the control plane refuses the node's heartbeats for clock skew (it cannot be
  // told what to run, nor relay its verdict, until its clock is fixed).
  reason: string | null;
  // The batch it was issued in (0: canary), or null.
  batch: number | null;
}

export type RunStatus = 'scheduled' | 'waiting' | 'paused' | 'running' | 'succeeded' | 'halted' | 'stopped';

// A plan whose run is over: the run ends with this status at its next advance.
export const planEnded = (s: RunStatus): s is 'succeeded' | 'halted' | 'stopped' => s === 'succeeded' || s === 'halted' || s === 'stopped';

export interface HaltReason {
  code: string;
  nodeId?: string;
  message: string;
}

export interface PlanCounts {
  targeted: number;
  notTargeted: number;
  confirmed: number;
  alreadyCurrent: number;
  refused: number;
  reverted: number;
  // Nodes that could not fetch the artifact (state `failed`).
  fetchFailed: number;
  pending: number;
  excluded: number;
}

export interface Plan {
  status: RunStatus;
  haltReason?: HaltReason;
  // The nodes issued as canaries that hold the role (a refused one handed it on).
  canaries: string[];
  nodes: Record<string, NodePlan>;
  // What to issue now, or null. Never a node this run issued.
  issue: { nodes: string[]; batch: number; notAfter: number | null } | null;
  // Failures counted against the budget (the carried ones included).
  failures: number;
  batchSize: number;
  refusedLimit: number;
  // Fetch failures each batch tolerates (of its issued nodes, --max-fetch-failures), by batch
  // number (0: the canaries), for the batches issued so far.
  fetchFailureLimits: Record<string, number>;
  canaryCount: number;
  counts: PlanCounts;
  // While a bake holds the next batch (or the end): when it ends.
  bakeUntil: number | null;
  // While waiting for a window: when the next one opens.
  nextWindowAt: number | null;
  // The next time the plan can change without new facts (a deadline, a bake, a window, the
  // start time, an analysis window's end), or null.
  wakeAt: number | null;
  // Analysis (docs/design.md §19), empty or null when off: every analysed step with its window;
  // the steps to judge now; while the next step waits for the analysis of the last one
  // (enforce), that step and when its window ends (a past time: its judgement is awaited).
  analysisSteps: AnalysisStep[];
  analysisDue: AnalysisDue[];
  analysisWait: { step: number; from: number; until: number } | null;
  // Why the run is paused when an analysis paused it (ANALYSIS_INCONCLUSIVE), not an operator.
  pauseReason?: HaltReason;
}

// The refusals that halt a run at the first: a release problem. The trust refusals of the host's
// own state (HOST_TRUST_CODES: TRUST_EXPIRED, TRUST_ROLLBACK, TRUST_NOT_DIRECTED) are not: the
// node is `refused` and counted against --max-refused (docs/design.md §21.5).
const HOST_TRUST: ReadonlySet<string> = new Set(HOST_TRUST_CODES);
const RELEASE_PROBLEMS: ReadonlySet<string> = new Set(RELEASE_PROBLEM_CODES.filter((c) => !HOST_TRUST.has(c)));

// A verdict `refused` (nothing changed, as every helper sends it) or `failed` with this code: the
// node could not fetch the artifact. Its trouble, not the release's (the signed integrity makes
// any mirror as good as another): state `failed`, counted in the budget, never a release halt.
const FETCH_FAILED = 'FETCH_FAILED';

interface Judged {
  // The node's place in the sorted node list.
  index: number;
  nodeId: string;
  attemptId: string;
  batch: number;
  state: NodeState;
  code: string | null;
  // The verdict's time, the deadline of a timed-out one, or the issue time while in flight.
  at: number;
  deadline: number;
}

interface HaltEvent extends HaltReason {
  at: number;
}

const earlier = (a: { at: number; nodeId?: string }, b: { at: number; nodeId?: string }) => a.at - b.at || ((a.nodeId ?? '') < (b.nodeId ?? '') ? -1 : (a.nodeId ?? '') > (b.nodeId ?? '') ? 1 : 0);

// Whether the control plane refused the node's heartbeats for clock skew at `t` and still does.
const skewedAt = (n: NodeFacts, t: number): boolean => n.clockSkewRefusedSince !== null && n.clockSkewRefusedSince <= t;

// Judges one issued node from the earliest verdict within its timeout (a later one leaves it
// timed-out, so a halt never turns back into a running run).
function judge(run: RolloutRun, i: Issued, verdict: VerdictFact | undefined, now: number, index: number): Judged {
  const deadline = i.issuedAt + run.policy.verdictTimeoutMs;
  const j = (state: NodeState, code: string | null, at: number): Judged => ({ index, nodeId: i.nodeId, attemptId: i.attemptId, batch: i.batch, deadline, state, code, at });
  if (!verdict) return now <= deadline ? j('issued', null, i.issuedAt) : j('timed-out', 'TIMED_OUT', deadline);
  if ((verdict.outcome === 'refused' || verdict.outcome === 'failed') && verdict.reasonCode === FETCH_FAILED) return j('failed', FETCH_FAILED, verdict.at);
  switch (verdict.outcome) {
    case 'active':
      return j('confirmed', null, verdict.at);
    case 'rolled-back':
    case 'failed':
      return j('reverted', verdict.reasonCode ?? (verdict.outcome === 'failed' ? 'FAILED' : 'ROLLED_BACK'), verdict.at);
    case 'refused':
      return j('refused', verdict.reasonCode ?? 'REFUSED', verdict.at);
  }
}

function failureMessage(run: RolloutRun, j: Judged, bake: boolean): string {
  const what = `${run.app} ${run.version}`;
  if (j.state === 'failed') return `node ${j.nodeId} could not fetch ${what} (${j.code})`;
  if (j.state === 'timed-out') return `node ${j.nodeId} sent no verdict for ${what} within ${run.policy.verdictTimeoutMs} ms`;
  if (bake) return `node ${j.nodeId} failed ${what} during its bake (${j.code})`;
  return `node ${j.nodeId} ${j.code === 'ROLLBACK_UNHEALTHY' || j.code === 'FAILED' ? 'failed' : 'rolled back'} ${what} (${j.code})`;
}

// Plans a rollout run (docs/design.md §11): targets frozen at the start; canaries first (confirmed and
// baked), then batches one at a time, each after the last one's verdicts and bake; halts at a
// canary's failure, ROLLBACK_UNHEALTHY, a release problem, or a failure or refusal beyond the
// budget; issues only after --start-at, unpaused, inside a window.
export function planRollout(input: PlanInput): Plan {
  const { run, now } = input;
  const p = run.policy;
  // By nodeId (code-point order, never a locale's): the store gives them so, and checking is cheaper than sorting.
  const sorted = input.nodes.every((n, i, a) => i === 0 || (a[i - 1] as NodeFacts).nodeId < n.nodeId);
  const nodes = sorted ? input.nodes : [...input.nodes].sort((a, b) => (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0));
  // Each node's plan, aligned with `nodes` (the record is built from it at the end, in nodeId order).
  const plans: NodePlan[] = new Array(nodes.length);
  const targets: number[] = [];
  for (let k = 0; k < nodes.length; k++) {
    const n = nodes[k] as NodeFacts;
    if (!n.listedApp) plans[k] = { state: 'not-targeted', reason: 'APP_NOT_ON_NODE', batch: null };
    else if (!heartbeatFresh(n.lastHeartbeatAt, run.startedAt, run.heartbeatIntervalMs)) plans[k] = { state: 'skipped', reason: skewedAt(n, run.startedAt) ? 'CLOCK_SKEW' : 'NO_RECENT_HEARTBEAT', batch: null };
    else targets.push(k);
  }
  const batchSize = batchSizeOf(p.batch, targets.length);
  const refusedLimit = refusalLimitOf(p.maxRefused, targets.length);
  const canaryCount = Math.min(Math.max(p.canaries, p.namedCanaries.length), targets.length);

  const issueOf = new Map<string, Issued>();
  for (const i of input.issued) {
    const cur = issueOf.get(i.nodeId);
    if (!cur || i.issuedAt < cur.issuedAt) issueOf.set(i.nodeId, i);
  }
  const verdictOf = new Map<string, VerdictFact>();
  for (const v of input.verdicts) {
    const i = issueOf.get(v.nodeId);
    if (!i || i.attemptId !== v.attemptId || v.at > i.issuedAt + p.verdictTimeoutMs) continue;
    const cur = verdictOf.get(v.attemptId);
    if (!cur || v.at < cur.at) verdictOf.set(v.attemptId, v);
  }

  const judged: Judged[] = [];
  const pending: string[] = [];
  for (const k of targets) {
    const t = nodes[k] as NodeFacts;
    const i = issueOf.get(t.nodeId);
    if (i) {
      judged.push(judge(run, i, verdictOf.get(i.attemptId), now, k));
      continue;
    }
    if (t.current === run.version) plans[k] = { state: 'already-current', reason: 'REPORTED', batch: null };
    else if (!p.allowRetryReverted && t.revertedVersions.includes(run.version)) plans[k] = { state: 'excluded-reverted', reason: 'REVERTED_BEFORE', batch: null };
    else {
      plans[k] = { state: 'pending', reason: skewedAt(t, now) ? 'CLOCK_SKEW' : null, batch: null };
      pending.push(t.nodeId);
    }
  }

  // A batch's bake runs from its last confirmation.
  const lastConfirm = new Map<number, number>();
  for (const j of judged) if (j.state === 'confirmed') lastConfirm.set(j.batch, Math.max(lastConfirm.get(j.batch) ?? j.at, j.at));
  const bakeEnd = (batch: number): number | null => {
    const c = lastConfirm.get(batch);
    return c === undefined ? null : c + p.bakeMs;
  };

  // A confirmed node that reverts or fails within its batch's bake: its later receipts, or its
  // supervisor reaching `error`.
  const revertsOf = new Map<string, RevertFact[]>();
  for (const r of input.reverts) revertsOf.set(r.nodeId, [...(revertsOf.get(r.nodeId) ?? []), r]);
  const bakeFailed = new Set<Judged>();
  for (const j of judged) {
    if (j.state !== 'confirmed') continue;
    const until = Math.min(bakeEnd(j.batch) as number, now);
    let hit: { at: number; code: string } | null = null;
    for (const r of revertsOf.get(j.nodeId) ?? []) {
      if (r.attemptId !== j.attemptId && r.at > j.at && r.at <= until && (!hit || r.at < hit.at)) hit = { at: r.at, code: r.reasonCode ?? (r.outcome === 'failed' ? 'FAILED' : 'ROLLED_BACK') };
    }
    const sup = (nodes[j.index] as NodeFacts).supervisor;
    if (sup?.state === 'error' && sup.since !== null && sup.since > j.at && sup.since <= until && (!hit || sup.since < hit.at)) hit = { at: sup.since, code: 'SUPERVISOR_ERROR' };
    if (hit) {
      j.state = 'reverted';
      j.code = hit.code;
      j.at = hit.at;
      bakeFailed.add(j);
    }
  }
  for (const j of judged) plans[j.index] = { state: j.state, reason: j.state === 'issued' && skewedAt(nodes[j.index] as NodeFacts, now) ? 'CLOCK_SKEW' : j.code, batch: j.batch };

  // Halting events, the first by time decides.
  const halts: HaltEvent[] = [];
  // A node that could not fetch counts in the budget whatever its batch (a canary's hands its role on).
  const failures = judged.filter((j) => (j.batch > 0 && (j.state === 'reverted' || j.state === 'timed-out')) || j.state === 'failed').sort(earlier);
  const refusals = judged.filter((j) => j.state === 'refused').sort(earlier);
  for (const j of judged) {
    const failed = j.state === 'reverted' || j.state === 'timed-out';
    if (failed && j.batch === 0) halts.push({ code: j.code as string, nodeId: j.nodeId, message: `canary ${failureMessage(run, j, bakeFailed.has(j))}`, at: j.at });
    else if (failed && j.code === 'ROLLBACK_UNHEALTHY') halts.push({ code: j.code, nodeId: j.nodeId, message: failureMessage(run, j, bakeFailed.has(j)), at: j.at });
    else if (j.state === 'refused' && RELEASE_PROBLEMS.has(j.code as string)) {
      halts.push({ code: j.code as string, nodeId: j.nodeId, message: `node ${j.nodeId} refused ${run.app} ${run.version}: a problem with the release (${j.code})${remedyOfReleaseProblem(j.code, run.app, run.version)}`, at: j.at });
    }
  }
  // More of one batch than --max-fetch-failures could not fetch: the artifact is the trouble
  // (pushed before the budget's halt, which wins a tie by push order otherwise).
  const fetchFailureLimits: Record<string, number> = {};
  const byBatch = new Map<number, Judged[]>();
  for (const j of judged) byBatch.set(j.batch, [...(byBatch.get(j.batch) ?? []), j]);
  for (const [batch, inBatch] of byBatch) {
    const limit = refusalLimitOf(p.maxFetchFailures, inBatch.length);
    fetchFailureLimits[String(batch)] = limit;
    const over = inBatch.filter((j) => j.state === 'failed').sort(earlier)[limit];
    if (!over) continue;
    const what = batch === 0 ? 'the canaries' : `batch ${batch}`;
    halts.push({ code: 'TOO_MANY_FETCH_FAILURES', nodeId: over.nodeId, message: `the artifact cannot be fetched: ${limit + 1} of the ${inBatch.length} nodes of ${what} could not fetch ${run.app} ${run.version} (the last: node ${over.nodeId}), over --max-fetch-failures ${formatAmount(p.maxFetchFailures)}`, at: over.at });
  }
  // The failure that takes the count (the carried ones first) past the budget.
  const firstOver = Math.max(0, p.maxFailures - p.failuresCarried);
  const overBudget = failures[firstOver];
  if (overBudget) {
    const n = p.failuresCarried + firstOver + 1;
    halts.push({ code: overBudget.code as string, nodeId: overBudget.nodeId, message: `${failureMessage(run, overBudget, bakeFailed.has(overBudget))}: failure ${n}, over the budget of ${p.maxFailures}`, at: overBudget.at });
  }
  const tooMany = refusals[refusedLimit];
  if (tooMany) {
    halts.push({ code: 'TOO_MANY_REFUSED', nodeId: tooMany.nodeId, message: `${refusedLimit + 1} of ${targets.length} targets refused ${run.app} ${run.version} (the last: node ${tooMany.nodeId}, ${tooMany.code}), over --max-refused ${formatAmount(p.maxRefused)}${remedyOfRefusal(tooMany.code, run.app, run.version, input.downgradeSigners)}`, at: tooMany.at });
  }
  // The analysis (docs/design.md §19): which steps are analysed, which are due, and an enforced fail.
  const mode = input.analysis?.mode ?? 'off';
  const judgementOf = new Map<number, StepJudgementFact>();
  for (const j of input.analysis?.judgements ?? []) if (!judgementOf.has(j.step)) judgementOf.set(j.step, j);
  const analysisSteps: AnalysisStep[] = [];
  const analysisDue: AnalysisDue[] = [];
  if (mode !== 'off' && input.analysis) {
    const windowMs = input.analysis.windowMs;
    // Once over the nodes (a plan of a 100,000-node run stays linear): the batches in flight, the last one.
    const inflightOf = new Set<number>();
    let maxBatch = -1;
    for (const j of judged) {
      if (j.state === 'issued') inflightOf.add(j.batch);
      if (j.batch > maxBatch) maxBatch = j.batch;
    }
    const laterStep = (s: number) => pending.length > 0 || maxBatch > s;
    const confirmedCanaries = (byBatch.get(0) ?? []).filter((j) => j.state === 'confirmed').length;
    for (const step of [...lastConfirm.keys()].sort((a, b) => a - b)) {
      // Converged: none of it in flight (and the canaries all confirmed), and a step follows it.
      if (inflightOf.has(step) || (step === 0 && confirmedCanaries < canaryCount && pending.length > 0) || !laterStep(step)) continue;
      const from = lastConfirm.get(step) as number;
      const to = from + windowMs;
      const j = judgementOf.get(step);
      analysisSteps.push({ step, from, to, verdict: j?.verdict ?? null });
      if (!j && now >= to) {
        const canary = (byBatch.get(step) ?? []).filter((x) => x.state === 'confirmed').map((x) => x.nodeId);
        analysisDue.push({ step, from, to, canary, baseline: [...pending] });
      }
    }
    if (mode === 'enforce') {
      for (const j of judgementOf.values()) {
        if (j.verdict === 'fail') halts.push({ code: 'ANALYSIS_FAILED', message: `the analysis of ${stepName(j.step)} of ${run.app} ${run.version} failed: ${j.summary}`, at: j.at });
      }
    }
  }
  const halt = halts.sort(earlier)[0];

  const counts: PlanCounts = { targeted: targets.length, notTargeted: nodes.length - targets.length, confirmed: 0, alreadyCurrent: 0, refused: 0, reverted: 0, fetchFailed: 0, pending: 0, excluded: 0 };
  const states: Record<string, NodePlan> = {};
  for (let k = 0; k < nodes.length; k++) {
    const plan = plans[k] as NodePlan;
    states[(nodes[k] as NodeFacts).nodeId] = plan;
    const s = plan.state;
    if (s === 'confirmed') counts.confirmed++;
    else if (s === 'already-current') counts.alreadyCurrent++;
    else if (s === 'refused') counts.refused++;
    else if (s === 'reverted' || s === 'timed-out') counts.reverted++;
    else if (s === 'failed') counts.fetchFailed++;
    else if (s === 'pending' || s === 'issued') counts.pending++;
    else if (s === 'excluded-reverted') counts.excluded++;
  }
  const canaries = judged.filter((j) => j.batch === 0 && j.state !== 'refused' && j.state !== 'failed').map((j) => j.nodeId);
  const inflight = judged.filter((j) => j.state === 'issued');
  const lastBatch = judged.reduce((m, j) => Math.max(m, j.batch), -1);
  const base = { canaries, nodes: states, failures: p.failuresCarried + failures.length, batchSize, refusedLimit, fetchFailureLimits, canaryCount, counts, nextWindowAt: null, analysisSteps, analysisDue: halt || run.stopped ? [] : analysisDue, analysisWait: null };
  const deadlines = inflight.map((j) => j.deadline + 1);
  const soonest = (...ts: Array<number | null>) => ts.reduce<number | null>((m, t) => (t === null || t <= now ? m : m === null ? t : Math.min(m, t)), null);

  if (halt) {
    const { at: _at, ...haltReason } = halt;
    return { ...base, status: 'halted', haltReason, issue: null, bakeUntil: null, wakeAt: null };
  }
  if (pending.length === 0 && inflight.length === 0) {
    // Done once the last batch's bake has passed too (a revert in it still counts).
    const until = lastBatch >= 0 ? bakeEnd(lastBatch) : null;
    if (until === null || now >= until) return { ...base, status: 'succeeded', issue: null, bakeUntil: null, wakeAt: null };
    if (run.stopped) return { ...base, status: 'stopped', issue: null, bakeUntil: null, wakeAt: null };
    return { ...base, status: 'running', issue: null, bakeUntil: until, wakeAt: until };
  }
  if (run.stopped) return { ...base, status: 'stopped', issue: null, bakeUntil: null, wakeAt: null };

  // What comes next: more canaries, or the next batch once nothing is in flight and the bake passed.
  let next: { nodes: string[]; batch: number } | null = null;
  let bakeUntil: number | null = null;
  let analysisWait: Plan['analysisWait'] = null;
  let inconclusive: HaltReason | null = null;
  const confirmed0 = judged.filter((j) => j.batch === 0 && j.state === 'confirmed').length;
  const inflight0 = inflight.filter((j) => j.batch === 0).length;
  if (confirmed0 < canaryCount && (inflight0 > 0 || pending.length > 0)) {
    const need = canaryCount - confirmed0 - inflight0;
    if (need > 0) next = { nodes: pickCanaries(pending, p.namedCanaries, p.canarySeed, need), batch: 0 };
  } else if (inflight.length === 0) {
    const until = lastBatch >= 0 ? bakeEnd(lastBatch) : null;
    // Enforced analysis: the last step's window has passed and its judgement let it go.
    const analysed = mode === 'enforce' ? analysisSteps.find((a) => a.step === lastBatch) : undefined;
    const verdict = analysed ? judgementOf.get(analysed.step) : undefined;
    if (analysed && (!verdict || verdict.verdict === 'fail')) analysisWait = { step: analysed.step, from: analysed.from, until: analysed.to };
    else if (analysed && verdict?.verdict === 'inconclusive' && !verdict.resumed) {
      inconclusive = { code: 'ANALYSIS_INCONCLUSIVE', message: `the analysis of ${stepName(analysed.step)} of ${run.app} ${run.version} was inconclusive: ${verdict.summary}; \`rollout resume ${run.app}\` (or \`target resume\` of its target) issues the next step, \`rollout stop ${run.app}\` ends the run` };
    }
    if (until !== null && now < until) bakeUntil = until;
    else if (!analysisWait && !inconclusive) next = { nodes: pending.slice(0, batchSize), batch: Math.max(lastBatch, 0) + 1 };
  }

  // May it be issued now: after --start-at, not paused, inside a window with time left for the
  // node's next heartbeat to carry it (its last interval, with the 10 % jitter, issues nothing).
  const win = windowAt(p.windows, p.tz, now);
  let status: RunStatus = 'running';
  let notAfter: number | null = null;
  let nextWindowAt: number | null = null;
  let windowWake: number | null = null;
  if (p.startAt !== null && now < p.startAt) status = 'scheduled';
  else if (run.paused || inconclusive) status = 'paused';
  else if (!win.open) {
    status = 'waiting';
    nextWindowAt = win.next;
  } else if (win.end !== null) {
    const lastCall = win.end - Math.min(Math.ceil(run.heartbeatIntervalMs * 1.1), Math.floor((win.end - win.start) / 2));
    if (now >= lastCall) {
      status = 'waiting';
      const after = windowAt(p.windows, p.tz, win.end);
      nextWindowAt = after.open ? after.start : after.next;
    } else {
      notAfter = win.end;
      windowWake = lastCall;
    }
  }
  const issue = status === 'running' && next && next.nodes.length > 0 ? { ...next, notAfter } : null;
  const windowEnds = analysisSteps.filter((a) => a.verdict === null).map((a) => a.to);
  const wakeAt = soonest(...deadlines, bakeUntil, status === 'scheduled' ? p.startAt : null, nextWindowAt, windowWake, ...windowEnds);
  return { ...base, status, issue, bakeUntil, nextWindowAt, wakeAt, analysisWait, ...(inconclusive && !run.paused && status === 'paused' ? { pauseReason: inconclusive } : {}) };
}

// How a step is named: the canaries, or batch N.
export function stepName(step: number): string {
  return step === 0 ? 'the canaries' : `batch ${step}`;
}

// The nodes a `rollout retry` run covers: every target (or skipped node) of the previous run
// that neither confirmed nor already ran the version; the new run judges them again at its start.
export function retryNodes(previous: Plan): string[] {
  return Object.keys(previous.nodes)
    .filter((id) => !['confirmed', 'already-current', 'not-targeted'].includes(previous.nodes[id]!.state))
    .sort();
}

// What the operator runs when the refusal that halted a run has a remedy on the control plane:
// a host refuses a version below the highest it ran without a signed downgrade authorization
// (docs/design.md §18), signed under TUF by a threshold of the app's delegation keys (docs/trust.md).
function remedyOfRefusal(code: string | null | undefined, app: string, version: string, signers: DowngradeSigners | null | undefined): string {
  if (code === 'DOWNGRADE_REFUSED') return `; the hosts ran a newer version: to go back, ${allowDowngradeRemedy(app, version, signers)}, then start the rollout again`;
  if (code && HOST_TRUST.has(code)) {
    return `; ${code} is the hosts' own trust state, not the release: \`steward-control nodes\` flags metadata-stale hosts (their agent has not fetched a fresh trust bundle) and \`steward-control trust status\` says whether the fleet's timestamp is fresh; once the hosts have caught up, \`steward-control rollout retry ${app}\``;
  }
  return '';
}

// What the operator checks when a trust refusal that halts a run names the release: the app's
// delegation does not vouch for it (docs/design.md §21.5).
function remedyOfReleaseProblem(code: string | null, app: string, version: string): string {
  if (code === 'TRUST_UNSIGNED') return `; the app.${app} delegation the host trusts does not sign this release's manifest (or index): is ${app} ${version} published under TUF (\`steward-control trust status\`, \`release add ${app} ${version} ... --key\` with the app's keys)?`;
  if (code?.startsWith('TRUST_')) return `; the host refused the fleet's TUF metadata: \`steward-control trust status\`, and the receipt's message in \`rollout status\``;
  return '';
}
