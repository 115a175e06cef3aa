// A target's reconcile step (docs/design.md §18), pure: the target, the nodes it selects now with
// what each reports, and what its runs made of each go in; each node's state and its one reason
// for being behind, and what to do now (nodes to add to the target's running run, or a new run to
// start), come out. The reason shown and the action taken come from the same decision, so that
// `target status` never says a node waits for a batch that the reconciler will not give it.
import { heartbeatFresh } from './heartbeat-freshness.js';
import type { NodePlan, RunStatus } from './rollout-planner.js';

// The closed set of reasons a selected node does not run the target's version.
export const BEHIND_REASONS = [
  'held',
  'pinned',
  'offline',
  'app-not-reported',
  'waiting-batch',
  'waiting-window',
  'in-progress',
  'quarantined',
  'reverted',
  'failed',
  'halted',
  'fetch-retrying',
  'clock-skew',
  'analysis-pending',
  'paused',
  'metadata-stale',
] as const;
export type BehindReasonName = (typeof BEHIND_REASONS)[number];

export interface BehindReason {
  reason: BehindReasonName;
  // Since when it holds, when known.
  since: number | null;
  // Who decided it (a pin's or hold's author) and until when, when it has one.
  by: string | null;
  until: number | null;
  // The code behind it (a receipt's reason code, a halt's code), or null.
  code: string | null;
  message: string;
}

export type TargetNodeState = 'current' | 'behind';

// What a run of the target at its version made of one node (the planner's NodePlan).
export interface NodeInRun {
  runId: number;
  // The run has not ended.
  active: boolean;
  // A `target revert` run (its version: the one the node goes back to), not a converging one.
  revert?: boolean;
  plan: NodePlan;
  // When its attempt was issued, or null.
  issuedAt: number | null;
}

export interface TargetNodeInput {
  nodeId: string;
  lastHeartbeatAt: number | null;
  // Its report of the app now, or null when it does not report it.
  // The host's hold details (heartbeat v6), when it sent them.
  app: { current: string | null; held: boolean; heldBy?: string | null; heldReason?: string | null; heldAt?: number | null; heldUntil?: number | null } | null;
  clockSkewRefusedSince: number | null;
  // The host trusts by TUF and its newest timestamp is over two re-sign periods old, or it has none,
  // while the fleet has a repository (docs/design.md §21.2): when it reported so; absent or null: not stale.
  metadataStaleSince?: number | null;
  // Its pin of the app, unexpired, or null.
  pin: { version: string; by: string | null; reason: string; at: number; until: number | null } | null;
  // It rolled back or failed the target's version before (a verified receipt).
  revertedVersion: boolean;
  // The target's runs at its version that hold the node, newest first (after the last
  // `target resume`): the first is the one that decides.
  runs: NodeInRun[];
  // A download the helper retries now (issue 33); the analysis its run waits for before it
  // issues the node's step (docs/design.md §19: the last step's window, `until` its end, or its
  // judgement); null when nothing says so.
  fetchRetrying: { since: number; message: string } | null;
  analysisPending: { since: number; message: string; until?: number | null } | null;
  // Another target's running run of the app may still issue the node (pending) or has it in flight
  // (issued): it is that run's until it decides; null when none does.
  elsewhere?: { runId: number; version: string; state: 'pending' | 'issued'; target: string | null } | null;
}

export interface TargetPlanInput {
  name: string;
  app: string;
  version: string;
  paused: boolean;
  allowRetryReverted: boolean;
  heartbeatIntervalMs: number;
  // The target's run at its version that has not ended, planned now, or null.
  // pauseReason: why an analysis paused it (ANALYSIS_INCONCLUSIVE), when one did.
  activeRun: { id: number; status: RunStatus; nextWindowAt: number | null; startAt: number | null; pauseReason?: { code: string; message: string } | null } | null;
  // The target's last run ended halted or stopped and no `target resume` or new version came after.
  halted: { runId: number; code: string | null; message: string; at: number | null } | null;
  // A one-shot or pin run of the app that has not ended (it goes alone: the target's next run
  // waits for it), or null. Other targets' runs go beside this one's (TargetNodeInput.elsewhere).
  otherRun: { id: number; version: string } | null;
  nodes: TargetNodeInput[];
  // Pending nodes of the active run that the target no longer selects (relabelled out, taken
  // by a target of higher priority, removed from its selector): the run must not issue them.
  unselectedPending: string[];
  now: number;
}

export interface TargetNodePlan {
  nodeId: string;
  state: TargetNodeState;
  reason: BehindReason | null;
}

export interface TargetPlan {
  nodes: TargetNodePlan[];
  // Members of the active run to record again (listedApp: whether the run may issue them):
  // nodes that became eligible (added, back online, reporting the app) and pending ones that
  // may no longer be issued (held, pinned, gone offline).
  refreeze: Array<{ nodeId: string; listedApp: boolean }>;
  // The nodes of a new run of the target to start now, or null.
  start: string[] | null;
}

const reason = (r: BehindReasonName, message: string, more: Partial<Omit<BehindReason, 'reason' | 'message'>> = {}): BehindReason => ({
  reason: r,
  since: null,
  by: null,
  until: null,
  code: null,
  message,
  ...more,
});

// Refusal codes after which the node is issued again once the cause is gone (the hold lifted,
// the window open); every other refusal or failure waits for `target resume`.
const TRANSIENT_REFUSALS: ReadonlySet<string> = new Set(['HELD', 'WINDOW_CLOSED']);

// What the newest run that holds the node made of it, as a reason; null when that leaves it
// free to be issued (never issued, or a transient refusal).
function runReason(t: TargetPlanInput, n: TargetNodeInput, r: NodeInRun): BehindReason | null {
  if (r.revert) return revertReason(t, r);
  const p = r.plan;
  const what = `${t.app} ${t.version}`;
  const runMsg = `rollout ${r.runId}`;
  switch (p.state) {
    case 'issued':
      if (n.fetchRetrying) return reason('fetch-retrying', n.fetchRetrying.message, { since: n.fetchRetrying.since });
      return reason(p.reason === 'CLOCK_SKEW' ? 'clock-skew' : 'in-progress', `${runMsg} issued it ${what}; waiting for its verdict`, { since: r.issuedAt, code: p.reason });
    case 'confirmed':
      if (n.analysisPending) return reason('analysis-pending', n.analysisPending.message, { since: n.analysisPending.since, until: n.analysisPending.until ?? null });
      // Confirmed, but its report does not show the version (yet, or any more).
      if (r.active) return reason('in-progress', `${runMsg} confirmed ${what}; its heartbeat does not report it yet`, { since: r.issuedAt });
      return null;
    case 'reverted':
    case 'timed-out': {
      const code = p.reason;
      const failed = p.state === 'timed-out' || code === 'FETCH_FAILED' || code === 'FAILED' || code === 'DOWNGRADE_REFUSED';
      return reason(failed ? 'failed' : 'reverted', `${failed ? 'failed' : 'rolled back'} ${what} in ${runMsg} (${code}); \`target resume ${t.name}\` issues it again`, { since: r.issuedAt, code });
    }
    case 'refused': {
      const code = p.reason ?? 'REFUSED';
      if (TRANSIENT_REFUSALS.has(code)) return null;
      if (code === 'QUARANTINED') return reason('quarantined', `its helper quarantined ${what} (${runMsg}); \`target resume ${t.name}\` issues it again`, { since: r.issuedAt, code });
      return reason('failed', `refused ${what} in ${runMsg} (${code}); \`target resume ${t.name}\` issues it again`, { since: r.issuedAt, code });
    }
    case 'excluded-reverted':
      return reason('reverted', `rolled back or failed ${what} before`, { code: 'REVERTED_BEFORE' });
    default:
      // pending, already-current, not-targeted, skipped: free to be issued (or refrozen).
      return null;
  }
}

// What a `target revert` run made of a node, as a reason; null when it has no say (not asked).
function revertReason(t: TargetPlanInput, r: NodeInRun): BehindReason | null {
  const p = r.plan;
  const run = `revert rollout ${r.runId}`;
  switch (p.state) {
    case 'issued':
      return reason('in-progress', `${run} asked it to roll ${t.app} back; waiting for its verdict`, { since: r.issuedAt, code: p.reason });
    case 'confirmed':
    case 'already-current':
      return reason('reverted', `\`target revert ${t.name}\` took it back (${run}); \`target resume ${t.name}\` converges it to ${t.version} again`, { since: r.issuedAt });
    case 'pending':
      return r.active ? reason('waiting-batch', `waits for a batch of ${run}`) : null;
    case 'refused':
    case 'reverted':
    case 'timed-out':
      return reason('failed', `did not roll ${t.app} back in ${run} (${p.reason})`, { since: r.issuedAt, code: p.reason });
    default:
      return null;
  }
}

// Plans one reconcile step of a target: every selected node's state and one reason, and the
// action. A node at the version has no reason; every other one has exactly one.
export function planTarget(t: TargetPlanInput): TargetPlan {
  const nodes: TargetNodePlan[] = [];
  const refreeze: TargetPlan['refreeze'] = [];
  const start: string[] = [];
  const what = `${t.app} ${t.version}`;
  for (const n of t.nodes) {
    const newest = n.runs[0] ?? null;
    const member = newest && newest.active && t.activeRun && newest.runId === t.activeRun.id ? newest : null;
    // A pending member of the running run: the run will issue it, unless it may not be any more.
    const pendingMember = member !== null && member.plan.state === 'pending';
    const frozenOut = member !== null && (member.plan.state === 'not-targeted' || member.plan.state === 'skipped');
    let why: BehindReason | null = null;
    let eligible = false;
    const fresh = heartbeatFresh(n.lastHeartbeatAt, t.now, t.heartbeatIntervalMs);
    if (n.app && n.app.current === t.version) {
      nodes.push({ nodeId: n.nodeId, state: 'current', reason: null });
      continue;
    }
    const inFlight = newest !== null && (newest.plan.state === 'issued' || (newest.plan.state === 'confirmed' && newest.active));
    if (n.app?.held && !inFlight) {
      why = reason('held', `the host holds ${t.app}${n.app.heldReason ? `: ${n.app.heldReason}` : ''}`, { since: n.app.heldAt ?? null, by: n.app.heldBy ?? null, until: n.app.heldUntil ?? null });
    } else if (n.pin && !inFlight) {
      why = reason('pinned', `pinned to ${t.app} ${n.pin.version}: ${n.pin.reason}`, { since: n.pin.at, by: n.pin.by, until: n.pin.until });
    } else if (!fresh) {
      // Even with an attempt in flight: a node that sends nothing makes no progress.
      why = reason('offline', n.lastHeartbeatAt === null ? 'it never sent a heartbeat' : 'no heartbeat within 3 intervals', { since: n.lastHeartbeatAt });
    } else if (n.clockSkewRefusedSince !== null && !inFlight) {
      why = reason('clock-skew', 'its heartbeats are refused for clock skew; fix its clock', { since: n.clockSkewRefusedSince, code: 'CLOCK_SKEW' });
    } else if (n.metadataStaleSince != null && !inFlight) {
      why = reason('metadata-stale', "its host's TUF metadata is over two hours old, or it has none: it cannot verify a release until its agent fetches the trust bundle", { since: n.metadataStaleSince });
    } else if (!n.app) {
      why = reason('app-not-reported', `its heartbeat does not list ${t.app}`, { code: 'APP_NOT_ON_NODE' });
    } else if (n.elsewhere && !inFlight) {
      const e = n.elsewhere;
      const of = `rollout ${e.runId}${e.target ? ` (target ${e.target})` : ''} of ${t.app} ${e.version}`;
      why = e.state === 'issued' ? reason('in-progress', `${of} has it in flight; the target issues it once that attempt decides`) : reason('waiting-batch', `${of} may still issue it; the target issues it once that run leaves it`);
    } else {
      why = newest ? runReason(t, n, newest) : null;
      if (why === null) {
        // Free to be issued: by the running run, or by the next one.
        if (t.paused) why = reason('paused', `target ${t.name} is paused`);
        else if (t.halted) why = reason('halted', `rollout ${t.halted.runId} of target ${t.name} ended: ${t.halted.message}; \`target resume ${t.name}\` goes on`, { since: t.halted.at, code: t.halted.code });
        else if (n.revertedVersion && !t.allowRetryReverted) why = reason('reverted', `rolled back or failed ${what} before`, { code: 'REVERTED_BEFORE' });
        else {
          eligible = true;
          const run = t.activeRun;
          if (run && run.status === 'waiting') why = reason('waiting-window', `rollout ${run.id} waits for its next window`, { until: run.nextWindowAt });
          else if (run && run.status === 'scheduled') why = reason('waiting-window', `rollout ${run.id} starts at its --start-at`, { until: run.startAt });
          else if (run && run.status === 'paused') why = run.pauseReason ? reason('paused', `rollout ${run.id} is paused: ${run.pauseReason.message}`, { code: run.pauseReason.code }) : reason('paused', `rollout ${run.id} is paused`);
          else if (run && n.analysisPending) why = reason('analysis-pending', n.analysisPending.message, { since: n.analysisPending.since, until: n.analysisPending.until ?? null });
          else if (run) why = reason('waiting-batch', `waits for a batch of rollout ${run.id}`);
          else if (t.otherRun) why = reason('waiting-batch', `waits for rollout ${t.otherRun.id} of ${t.app} ${t.otherRun.version} to end (a one-shot run goes alone)`);
          else why = reason('waiting-batch', `the target's next run issues it`);
        }
      }
    }
    nodes.push({ nodeId: n.nodeId, state: 'behind', reason: why });
    if (t.activeRun) {
      if (eligible && (member === null || frozenOut)) refreeze.push({ nodeId: n.nodeId, listedApp: true });
      else if (!eligible && pendingMember) refreeze.push({ nodeId: n.nodeId, listedApp: false });
    } else if (eligible && !t.otherRun) start.push(n.nodeId);
  }
  if (t.activeRun) for (const id of t.unselectedPending) refreeze.push({ nodeId: id, listedApp: false });
  return { nodes, refreeze, start: start.length > 0 ? start : null };
}
