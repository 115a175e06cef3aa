// What `target status` and `target list` print and the admin API serves (docs/design.md §18): a
// target, its run, and each node it selects with its one reason for being behind.
import { BEHIND_REASONS, type BehindReason, type BehindReasonName, type TargetNodeState } from '../../core/target-plan.js';
import type { TargetPolicy, TargetRow } from '../store/store.js';
import type { AnalysisView } from '../rollouts/analysis-view.js';
import type { TargetReading } from './read-target.js';

// waiting: it selects no node yet.
export type TargetStatus = 'converged' | 'converging' | 'paused' | 'halted' | 'waiting';

export interface TargetNodeView {
  nodeId: string;
  hostname: string;
  // The version of the app it reports, or null.
  version: string | null;
  state: TargetNodeState;
  reason: BehindReason | null;
}

export interface TargetSummary {
  name: string;
  app: string;
  version: string;
  priority: number;
  selector: string;
  policy: TargetPolicy;
  paused: boolean;
  setAt: number;
  setBy: string | null;
  status: TargetStatus;
  // The target's run that has not ended, or null.
  run: { id: number; version: string; status: string } | null;
  // Its running run's analysis (docs/design.md §19): mode, window, the step it waits for, each
  // step's judgement; null without a running run.
  analysis: AnalysisView | null;
  // The run that halted it, with why, while it is halted.
  halted: { runId: number; code: string | null; message: string } | null;
  counts: { selected: number; current: number; behind: number };
  // How many nodes are behind for each reason (every reason of the closed set, 0 included).
  behind: Record<BehindReasonName, number>;
}

export interface TargetView extends TargetSummary {
  nodes: TargetNodeView[];
}

// The view of a target read and planned now.
export function targetView(r: TargetReading): TargetView {
  const t: TargetRow = r.target;
  const behind = Object.fromEntries(BEHIND_REASONS.map((b) => [b, 0])) as Record<BehindReasonName, number>;
  const nodes: TargetNodeView[] = r.plan.nodes.map((p) => {
    if (p.reason) behind[p.reason.reason]++;
    const n = r.nodes.get(p.nodeId);
    return { nodeId: p.nodeId, hostname: n?.hostname ?? '', version: n?.apps.find((a) => a.name === t.app)?.current ?? null, state: p.state, reason: p.reason };
  });
  const current = nodes.filter((n) => n.state === 'current').length;
  const halted = r.input.halted;
  const status: TargetStatus = t.paused ? 'paused' : halted ? 'halted' : nodes.length === 0 ? 'waiting' : current === nodes.length ? 'converged' : 'converging';
  const own = r.ownRun;
  return {
    name: t.name,
    app: t.app,
    version: t.version,
    priority: t.priority,
    selector: t.policy.selector,
    policy: t.policy,
    paused: t.paused,
    setAt: t.setAt,
    setBy: t.setBy,
    status,
    run: own ? { id: own.id, version: own.version, status: r.input.activeRun?.id === own.id ? r.input.activeRun.status : own.status } : null,
    analysis: r.analysis,
    halted: halted ? { runId: halted.runId, code: halted.code, message: halted.message } : null,
    counts: { selected: nodes.length, current, behind: nodes.length - current },
    behind,
    nodes,
  };
}

// The summary of a view (`target list`): without the nodes.
export function targetSummary(v: TargetView): TargetSummary {
  const { nodes: _nodes, ...summary } = v;
  return summary;
}
