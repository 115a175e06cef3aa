// Builds a target's reconcile input from the store (docs/design.md §18) and plans it: the nodes it
// selects now (its selector, less those a target of the app with a higher priority selects),
// what each reports, its pin, and what the target's runs at its version made of it.
import { matchesSelector, parseSelector } from '../../core/selector.js';
import { planTarget, type NodeInRun, type TargetPlan, type TargetPlanInput } from '../../core/target-plan.js';
import type { Plan } from '../../core/rollout-planner.js';
import { analysisView, type AnalysisView } from '../rollouts/analysis-view.js';
import { planRun } from '../rollouts/plan-run.js';
import { isTargetRun, nodesInOtherRuns } from '../rollouts/start-run.js';
import { readHeartbeatSeconds } from '../store/settings.js';
import type { NodeRow, PinRow, RunRow, StoreReader, TargetRow } from '../store/store.js';
import { isMetadataStale } from '../trust/freshness.js';

export interface TargetReading {
  target: TargetRow;
  input: TargetPlanInput;
  plan: TargetPlan;
  // The nodes it selects, by nodeId.
  nodes: Map<string, NodeRow>;
  // The target's run that has not ended (at any version), or null.
  ownRun: RunRow | null;
  // The analysis of its running run at its version (docs/design.md §19), or null.
  analysis: AnalysisView | null;
}

// Whether target `a` wins a node over target `b` of the same app: the higher priority, and
// between equal ones (an overlap `target set` refuses, but relabelling can make) the name
// that sorts first.
export function outranks(a: Pick<TargetRow, 'name' | 'priority'>, b: Pick<TargetRow, 'name' | 'priority'>): boolean {
  return a.priority > b.priority || (a.priority === b.priority && a.name < b.name);
}

// The nodes `target` selects among `all`, given every target: its selector's matches that no
// target of the same app outranking it also matches.
export function selectedNodes(target: Pick<TargetRow, 'name' | 'app' | 'priority' | 'policy'>, targets: readonly TargetRow[], all: readonly NodeRow[]): NodeRow[] {
  const own = parseSelector(target.policy.selector);
  const rivals = targets.filter((t) => t.name !== target.name && t.app === target.app && outranks(t, target)).map((t) => parseSelector(t.policy.selector));
  return all.filter((n) => matchesSelector(own, n.labels) && !rivals.some((r) => matchesSelector(r, n.labels)));
}

// Reads and plans a target at `now`. `pins` and `all` may be passed in when a caller reads
// several targets at once.
export async function readTarget(tx: StoreReader, target: TargetRow, now: number, pre?: { targets: TargetRow[]; nodes: NodeRow[]; pins: PinRow[] }): Promise<TargetReading> {
  const targets = pre?.targets ?? (await tx.targets.list());
  const all = pre?.nodes ?? (await tx.nodes.list());
  // A node is metadata-stale only while the fleet has a TUF repository (docs/design.md §21.2).
  const hasRepository = (await tx.trust.latest('timestamp')) !== null;
  const pins = (pre?.pins ?? (await tx.pins.list())).filter((p) => p.app === target.app && (p.until === null || p.until > now));
  const heartbeatIntervalMs = (await readHeartbeatSeconds(tx)) * 1000;
  const selected = selectedNodes(target, targets, all);
  const pinOf = new Map(pins.map((p) => [p.nodeId, p]));
  const reverted = new Set((await tx.receipts.revertsOfApp(target.app)).filter((r) => r.targetVersion === target.version).map((r) => r.nodeId));

  // The target's runs at its version since the last resume, newest first, planned now.
  // Its revert runs since then too (their version is the one nodes go back to).
  const owned = (await tx.targets.runs(target.name)).filter((o) => o.runId > target.clearedRunId);
  type Planned = { row: RunRow; plan: Awaited<ReturnType<typeof planRun>>; issuedAt: Map<string, number>; revert: boolean };
  const runs: Planned[] = [];
  const every: Planned[] = [];
  let ownRun: RunRow | null = null;
  for (const o of owned) {
    const row = await tx.runs.get(o.runId);
    if (!row) continue;
    const revert = o.kind === 'revert';
    if (!revert && row.status === 'running' && ownRun === null) ownRun = row;
    if (!revert && row.version !== target.version) continue;
    const issuedAt = new Map((await tx.runs.issued(row.id)).map((i) => [i.nodeId, i.issuedAt]));
    const p: Planned = { row, plan: await planRun(tx, row, now), issuedAt, revert };
    every.push(p);
    if (!revert) runs.push(p);
  }
  const latest = runs[0] ?? null;
  const active = latest && latest.row.status === 'running' ? latest : null;
  const halted =
    latest && (latest.row.status === 'halted' || latest.row.status === 'stopped')
      ? { runId: latest.row.id, code: latest.row.haltCode, message: latest.row.status === 'stopped' ? 'stopped by an operator' : (latest.row.haltMessage ?? 'halted'), at: latest.row.endedAt }
      : null;
  // Runs of the app that are not this target's: a one-shot or pin run holds back the target's next
  // run (it goes alone); another target's run goes beside it, but a node it may still issue or has
  // in flight is that run's until it decides (docs/design.md §18).
  const ownIds = new Set(owned.map((o) => o.runId));
  let otherRun: { id: number; version: string } | null = null;
  for (const r of await tx.runs.runningOf(target.app)) {
    if (ownIds.has(r.id) || otherRun) continue;
    if (!isTargetRun(await tx.targets.ownerOf(r.id))) otherRun = { id: r.id, version: r.version };
  }
  const elsewhere = await nodesInOtherRuns(tx, target.app, ownIds);

  const selectedIds = new Set(selected.map((n) => n.nodeId));
  const input: TargetPlanInput = {
    name: target.name,
    app: target.app,
    version: target.version,
    paused: target.paused,
    allowRetryReverted: target.policy.allowRetryReverted,
    heartbeatIntervalMs,
    activeRun: active ? { id: active.row.id, status: active.plan.status, nextWindowAt: active.plan.nextWindowAt, startAt: active.row.startAt, pauseReason: active.plan.pauseReason ?? null } : null,
    halted,
    otherRun,
    nodes: selected.map((n) => {
      const app = n.apps.find((a) => a.name === target.app) ?? null;
      const pin = pinOf.get(n.nodeId);
      const inRuns: NodeInRun[] = [];
      for (const r of every) {
        const plan = r.plan.nodes[n.nodeId];
        if (plan) inRuns.push({ runId: r.row.id, active: r.row.status === 'running', plan, issuedAt: r.issuedAt.get(n.nodeId) ?? null, ...(r.revert ? { revert: true } : {}) });
      }
      return {
        nodeId: n.nodeId,
        lastHeartbeatAt: n.lastHeartbeatAt,
        app: app ? { current: app.current, held: app.held, ...(app.held && app.hold ? { heldBy: app.hold.by, heldReason: app.hold.reason, heldAt: app.hold.at, heldUntil: app.hold.until } : {}) } : null,
        clockSkewRefusedSince: n.clockSkewRefused?.since ?? null,
        metadataStaleSince: isMetadataStale(n, hasRepository) ? (n.trust?.at ?? null) : null,
        pin: pin ? { version: pin.version, by: pin.by, reason: pin.reason, at: pin.at, until: pin.until } : null,
        revertedVersion: reverted.has(n.nodeId),
        runs: inRuns,
        // Its helper waits to try the download again (heartbeat v6), of the attempt a running
        // run of the target issued it: that attempt is the app's one in flight on the node.
        fetchRetrying: fetchRetryingOf(app, inRuns, `${target.app} ${target.version}`),
        analysisPending: analysisPendingOf(active, n.nodeId),
        elsewhere: elsewhere.get(n.nodeId) ?? null,
      };
    }),
    unselectedPending: active ? Object.entries(active.plan.nodes).filter(([id, p]) => p.state === 'pending' && !selectedIds.has(id)).map(([id]) => id) : [],
    now,
  };
  const analysis = active ? analysisView(active.row, active.plan, active.row.analysis.mode === 'off' ? [] : await tx.runs.judgements(active.row.id)) : null;
  return { target, input, plan: planTarget(input), nodes: new Map(selected.map((n) => [n.nodeId, n])), ownRun, analysis };
}

// The analysis the target's running run waits for before its next step (docs/design.md §19), for a
// node that step would issue: its run's plan has it pending.
function analysisPendingOf(active: { row: RunRow; plan: Plan } | null, nodeId: string): { since: number; message: string; until: number } | null {
  const wait = active?.plan.analysisWait;
  if (!active || !wait || active.plan.nodes[nodeId]?.state !== 'pending') return null;
  const step = wait.step === 0 ? 'the canaries' : `batch ${wait.step}`;
  return { since: wait.from, until: wait.until, message: `rollout ${active.row.id} waits for the analysis of ${step} before its next step; the window ends at ${new Date(wait.until).toISOString()}` };
}

function fetchRetryingOf(app: { fetchRetrying?: { attemptId: string } } | null, runs: NodeInRun[], what: string): { since: number; message: string } | null {
  if (!app?.fetchRetrying) return null;
  const issued = runs.find((r) => r.active && r.plan.state === 'issued');
  if (!issued) return null;
  return { since: issued.issuedAt ?? 0, message: `its download of ${what} failed; the helper tries again (attempt ${app.fetchRetrying.attemptId})` };
}
