// The reconcile loop of a target (docs/design.md §18), as a Kubernetes controller's: read the target
// and the nodes it selects, plan with the pure planTarget, act on the plan, and be idempotent, so
// that a missed tick or a killed instance only delays, never duplicates (the store's one-run-
// per-app and one-attempt-per-node constraints decide between two instances).
import { logger } from '../../platform/log.js';
import { recordTargetStatus, targetStatusChanged } from '../hooks/target-events.js';
import { advanceRun } from '../rollouts/advance-runs.js';
import { newCanarySeed } from '../rollouts/run-options.js';
import { setRunPaused, startOwnedRun } from '../rollouts/start-run.js';
import type { ControlStore, RunPolicy, RunRow, StoreTx, TargetRow } from '../store/store.js';
import { readTarget, type TargetReading } from './read-target.js';

const log = logger('control:targets');

// The run policy of a target's next run: its own, with a fresh canary seed. A run after the
// first one at the version (nodes that came later) has no canaries: the first run's canaries
// confirmed the version; it keeps the batches, bake, budget and windows.
export function targetRunPolicy(t: TargetRow, followUp: boolean): RunPolicy {
  return { ...t.policy, ...(followUp ? { canaries: 0, namedCanaries: [] } : {}), canarySeed: newCanarySeed(), failuresCarried: 0, behind: false, retryOf: null };
}

// One reconcile step of target `name` in the caller's transaction: stops its run of a version it
// no longer wants, matches its run's pause to its own, records nodes that became eligible (or
// no longer are) in its running run, or starts its next run. The reading after the step; null
// when there is no such target.
export async function reconcileTarget(tx: StoreTx, name: string): Promise<TargetReading | null> {
  const target = await tx.targets.get(name);
  if (!target) return null;
  const now = await tx.now();
  let reading = await readTarget(tx, target, now);
  const own = reading.ownRun;
  if (own && own.version !== target.version) {
    // Why stop it: the target wants another version now; its issued attempts keep their verdicts.
    await tx.runs.lock(own.id);
    await tx.runs.setStopped(own.id);
    await advanceRun(tx, own.id);
    log('target=%s stopped run=%d of %s %s: the target wants %s', name, own.id, own.app, own.version, target.version);
    reading = await readTarget(tx, target, now);
  } else if (own && own.paused !== target.paused) {
    await tx.runs.lock(own.id);
    await setRunPaused(tx, own, target.paused);
    reading = await readTarget(tx, target, now);
  }
  const { plan, input } = reading;
  if (input.activeRun && plan.refreeze.length > 0) {
    const runId = input.activeRun.id;
    await tx.runs.lock(runId);
    const byId = reading.nodes;
    const all = plan.refreeze.some((r) => !byId.has(r.nodeId)) ? new Map((await tx.nodes.list()).map((n) => [n.nodeId, n])) : byId;
    await tx.runs.refreezeNodes(
      runId,
      plan.refreeze.flatMap((r) => {
        const n = all.get(r.nodeId);
        return n ? [{ nodeId: r.nodeId, lastHeartbeatAt: n.lastHeartbeatAt, listedApp: r.listedApp }] : [];
      }),
    );
    await advanceRun(tx, runId);
    log('target=%s run=%d refroze %s', name, runId, plan.refreeze.map((r) => `${r.nodeId}:${r.listedApp ? 'in' : 'out'}`).join(','));
    return readTarget(tx, target, now);
  }
  if (plan.start) {
    const nodes = plan.start.map((id) => reading.nodes.get(id)).filter((n) => n !== undefined);
    const followUp = (await tx.targets.runs(name)).some((o) => o.kind === 'target' && o.runId > target.clearedRunId);
    // A named canary this run would not ask (it reverted the version, is held, offline or current)
    // is left out, not a reason to start no run: the run picks its canaries among the others.
    const policy = targetRunPolicy(target, followUp);
    const asked = new Set(plan.start);
    const run = await startOwnedRun(tx, target.app, target.version, nodes, { ...policy, namedCanaries: policy.namedCanaries.filter((id) => asked.has(id)) }, { kind: 'target', target: name });
    if (run) {
      log('target=%s started run=%d of %s %s over %d node(s)', name, run.id, run.app, run.version, nodes.length);
      return readTarget(tx, target, now);
    }
  }
  return reading;
}

// Reconciles every target, each in a transaction of its own (a failed one does not hold back
// the others). Returns how many failed. Which ones have anything to do is read first, in one read
// transaction that reads the nodes, targets and pins once for all of them (at 10,000 nodes a
// read of every node is most of a target's reading); a converged or waiting target writes nothing.
export async function reconcileTargets(store: ControlStore): Promise<number> {
  let failed = 0;
  const busy = await store.read(async (tx) => {
    const targets = await tx.targets.list();
    if (targets.length === 0) return [];
    const pre = { targets, nodes: await tx.nodes.list(), pins: await tx.pins.list() };
    const now = await tx.now();
    const out: string[] = [];
    for (const t of targets) {
      try {
        const r = await readTarget(tx, t, now, pre);
        const own = r.ownRun;
        // A change of its status is an event to record (hooks/target-events.ts).
        if ((own && (own.version !== t.version || own.paused !== t.paused)) || r.plan.refreeze.length > 0 || r.plan.start !== null || (await targetStatusChanged(tx, r))) out.push(t.name);
      } catch (err) {
        failed++;
        log('reconcile of target=%s failed: %s', t.name, (err as Error)?.message ?? String(err));
      }
    }
    return out;
  });
  for (const name of busy) {
    try {
      await store.write(async (tx) => {
        const reading = await reconcileTarget(tx, name);
        // Its status as this step leaves it, and the event of its change (hooks/target-events.ts).
        if (reading) await recordTargetStatus(tx, reading);
      });
    } catch (err) {
      failed++;
      log('reconcile of target=%s failed: %s', name, (err as Error)?.message ?? String(err));
    }
  }
  return failed;
}

// The runs a target owns that have not ended, for a change that must lock them first.
export async function ownActiveRun(tx: StoreTx, name: string): Promise<RunRow | null> {
  for (const o of await tx.targets.runs(name)) {
    const row = await tx.runs.get(o.runId);
    if (row?.status === 'running') return row;
  }
  return null;
}
