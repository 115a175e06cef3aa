// The rollout planner of DESIGN §9, pure: a run's settings, the recorded facts about its nodes,
// the attempts it issued, the verified receipts that answer them and the clock go in; every
// node's state, the run's status and the nodes to issue the version to now come out.
// No I/O, no Date.now: calling it twice with the same input gives the same plan.
import { RELEASE_PROBLEM_CODES } from './errors.js';

export interface RolloutRun {
  id: string;
  app: string;
  version: string;
  startedAt: number;
  // The requested canary nodeId; when it is not eligible the first eligible node by nodeId is.
  canary: string | null;
  // Nodes per batch after the canary; anything below 1 counts as 1.
  batchSize: number;
  verdictTimeoutMs: number;
  allowRetryReverted: boolean;
  heartbeatIntervalMs: number;
  stopped: boolean;
}

export interface NodeFacts {
  nodeId: string;
  // The node's last heartbeat as of the run's start (at or before run.startedAt). A later time
  // counts as alive, so a caller that passes the latest heartbeat lets a node that was stale at
  // the start join the run once it comes back.
  lastHeartbeatAt: number | null;
  // The version the node reports for the run's app.
  current: string | null;
  // Versions this node rolled back or failed before, from verified receipts of earlier runs.
  revertedVersions: string[];
}

// One attempt this run issued. The caller makes the attemptId and records the issue before
// sending it; a node is issued at most once per run.
export interface Issued {
  nodeId: string;
  attemptId: string;
  issuedAt: number;
}

// A verified receipt. Only receipts carrying an attemptId this run issued count; the caller
// may pass others, they are ignored.
export interface VerdictFact {
  nodeId: string;
  attemptId: string;
  outcome: 'active' | 'rolled-back' | 'failed' | 'refused';
  reasonCode: string | null;
  at: number;
}

export interface PlanInput {
  run: RolloutRun;
  nodes: NodeFacts[];
  issued: Issued[];
  verdicts: VerdictFact[];
  now: number;
}

// skipped: stale when the run started. pending: eligible, not issued yet. issued: waiting for
// its verdict. confirmed: `active` for this run's attempt, or it already ran the version and
// needed no attempt. refused: a refusal that lets the run go on (or a release problem, which
// halts it). reverted: `rolled-back` or `failed`. timed-out: no verdict within the timeout.
// excluded-reverted: it reverted this version before and the run does not allow a retry.
export type NodeState =
  | 'skipped'
  | 'pending'
  | 'issued'
  | 'confirmed'
  | 'refused'
  | 'reverted'
  | 'timed-out'
  | 'excluded-reverted';

// Halt codes: the receipt's reason code when it has one (REPLACEMENT_UNHEALTHY,
// ROLLBACK_UNHEALTHY, a release problem, ...), else ROLLED_BACK or FAILED; TIMED_OUT when no
// verdict came within the timeout.
export interface HaltReason {
  code: string;
  nodeId?: string;
  message: string;
}

export interface Plan {
  status: 'running' | 'succeeded' | 'halted' | 'stopped';
  haltReason?: HaltReason;
  // The node holding the canary role now (after hand-offs); null when no node holds it.
  canary: string | null;
  nodes: Record<string, NodeState>;
  // nodeIds to issue the version to now; never one this run already issued.
  issue: string[];
}

const RELEASE_PROBLEMS: ReadonlySet<string> = new Set(RELEASE_PROBLEM_CODES);
const TERMINAL: ReadonlySet<NodeState> = new Set<NodeState>([
  'skipped',
  'confirmed',
  'refused',
  'reverted',
  'timed-out',
  'excluded-reverted',
]);

// Code-point order, so the plan never depends on a locale.
const byId = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

interface Attempt {
  nodeId: string;
  issuedAt: number;
  state: NodeState;
  halt: (HaltReason & { at: number }) | null;
}

// Judges one issued node from the verdicts carrying one of the attemptIds this run gave it.
// The earliest verdict within the timeout decides; one arriving later leaves it timed-out, so a
// halt never turns back into a running run.
function judgeAttempt(run: RolloutRun, nodeId: string, issues: Issued[], verdicts: VerdictFact[], now: number): Attempt {
  const issuedAt = Math.min(...issues.map((i) => i.issuedAt));
  const deadline = issuedAt + run.verdictTimeoutMs;
  const ids = new Set(issues.map((i) => i.attemptId));
  const verdict = verdicts
    .filter((v) => v.nodeId === nodeId && ids.has(v.attemptId) && v.at <= deadline)
    .sort((a, b) => a.at - b.at)[0];
  const what = `${run.app} ${run.version}`;
  if (!verdict) {
    if (now <= deadline) return { nodeId, issuedAt, state: 'issued', halt: null };
    const message = `node ${nodeId} sent no verdict for ${what} within ${run.verdictTimeoutMs} ms`;
    return { nodeId, issuedAt, state: 'timed-out', halt: { code: 'TIMED_OUT', nodeId, message, at: deadline } };
  }
  const code = verdict.reasonCode;
  switch (verdict.outcome) {
    case 'active':
      return { nodeId, issuedAt, state: 'confirmed', halt: null };
    case 'rolled-back':
    case 'failed': {
      const verb = verdict.outcome === 'failed' ? 'failed' : 'rolled back';
      const message = `node ${nodeId} ${verb} ${what}${code ? ` (${code})` : ''}`;
      const haltCode = code ?? (verdict.outcome === 'failed' ? 'FAILED' : 'ROLLED_BACK');
      return { nodeId, issuedAt, state: 'reverted', halt: { code: haltCode, nodeId, message, at: verdict.at } };
    }
    case 'refused': {
      if (code === null || !RELEASE_PROBLEMS.has(code)) return { nodeId, issuedAt, state: 'refused', halt: null };
      const message = `node ${nodeId} refused ${what}: a problem with the release (${code})`;
      return { nodeId, issuedAt, state: 'refused', halt: { code, nodeId, message, at: verdict.at } };
    }
  }
}

// The state of a node this run did not issue, from its facts alone.
function judgeUnissued(run: RolloutRun, node: NodeFacts): NodeState {
  const hb = node.lastHeartbeatAt;
  if (hb === null || run.startedAt - hb > 3 * run.heartbeatIntervalMs) return 'skipped';
  if (node.current === run.version) return 'confirmed';
  if (!run.allowRetryReverted && node.revertedVersions.includes(run.version)) return 'excluded-reverted';
  return 'pending';
}

// Plans a rollout run (DESIGN §9): one canary first, then batches of run.batchSize, one batch
// at a time; halts at the first revert, release problem or timeout.
export function planRollout(input: PlanInput): Plan {
  const { run, now } = input;
  const nodes = [...input.nodes].sort((a, b) => byId(a.nodeId, b.nodeId));
  const known = new Set(nodes.map((n) => n.nodeId));

  const issuesByNode = new Map<string, Issued[]>();
  for (const i of input.issued) {
    if (!known.has(i.nodeId)) continue; // a node removed from the fleet leaves the run
    issuesByNode.set(i.nodeId, [...(issuesByNode.get(i.nodeId) ?? []), i]);
  }

  const states: Record<string, NodeState> = {};
  const attempts: Attempt[] = [];
  for (const node of nodes) {
    const issues = issuesByNode.get(node.nodeId);
    if (issues) {
      const attempt = judgeAttempt(run, node.nodeId, issues, input.verdicts, now);
      attempts.push(attempt);
      states[node.nodeId] = attempt.state;
    } else {
      states[node.nodeId] = judgeUnissued(run, node);
    }
  }
  attempts.sort((a, b) => a.issuedAt - b.issuedAt || byId(a.nodeId, b.nodeId));

  // The first halting event by time (a timeout happens at its deadline), ties by nodeId.
  const halting = attempts
    .flatMap((a) => (a.halt ? [a.halt] : []))
    .sort((a, b) => a.at - b.at || byId(a.nodeId ?? '', b.nodeId ?? ''))[0];

  const pending = nodes.map((n) => n.nodeId).filter((id) => states[id] === 'pending');

  // The canary is the first issued node that confirmed; else the one still holding the role (in
  // flight, or the one that halted the run); else, once every issued one refused and so handed
  // the role on, the next pending node: the requested one first, then by nodeId.
  let canary: string | null = null;
  let canaryConfirmed = false;
  const confirmedAttempt = attempts.find((a) => a.state === 'confirmed');
  const openAttempt = attempts.find((a) => a.state !== 'refused' || a.halt !== null);
  if (confirmedAttempt) {
    canary = confirmedAttempt.nodeId;
    canaryConfirmed = true;
  } else if (openAttempt) {
    canary = openAttempt.nodeId;
  } else if (run.canary !== null && pending.includes(run.canary)) {
    canary = run.canary;
  } else {
    canary = pending[0] ?? null;
  }

  const allTerminal = Object.values(states).every((s) => TERMINAL.has(s));
  const base = { canary, nodes: states };
  if (halting) {
    const { at: _at, ...haltReason } = halting;
    return { status: 'halted', haltReason, ...base, issue: [] };
  }
  if (allTerminal) return { status: 'succeeded', ...base, issue: [] };
  if (run.stopped) return { status: 'stopped', ...base, issue: [] };

  let issue: string[] = [];
  if (!canaryConfirmed) {
    if (canary !== null && states[canary] === 'pending') issue = [canary];
  } else if (!attempts.some((a) => a.state === 'issued')) {
    issue = pending.slice(0, Math.max(1, Math.floor(run.batchSize)));
  }
  return { status: 'running', ...base, issue };
}

// The nodes a `rollout retry` run covers: every node of the previous run that did not confirm,
// the skipped and excluded ones included (the new run judges them again at its own start).
export function retryNodes(previous: Plan): string[] {
  return Object.keys(previous.nodes)
    .filter((id) => previous.nodes[id] !== 'confirmed')
    .sort(byId);
}
