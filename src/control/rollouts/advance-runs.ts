// The imperative layer around the planner: plan a run under its advance lock, record the
// attempts it issues before any is sent, and record its end once.
import { randomBytes } from 'node:crypto';
import { planEnded, type Plan } from '../../core/rollout-planner.js';
import { logger } from '../../platform/log.js';
import type { StopPoints } from '../server/test-stop-points.js';
import type { StoreTx } from '../store/store.js';
import { emitRunEvent } from '../hooks/run-events.js';
import { desiredChanged, inFlightNodes } from './desired-changed.js';
import { planRun } from './plan-run.js';

const log = logger('control:rollouts');

// A fresh attemptId for one issue of a run: r<runId>-<16 hex>, within ATTEMPT_ID_RE.
export function newAttemptId(runId: number): string {
  return `r${runId}-${randomBytes(8).toString('hex')}`;
}

// What one advance did: the plan after it (the issued nodes show as issued) and the nodes it
// issued an attempt to.
export interface Advance {
  plan: Plan;
  issued: string[];
}

// Advances one run at the store's time, inside the caller's write transaction, after waiting
// for the run's advance lock (another instance's tick, an operator's stop). Null when the run
// has ended. A node the run already issued to is never issued again: the lock keeps two
// advances apart, and insertIssued's constraint holds even where it would not.
export async function advanceRun(tx: StoreTx, runId: number, stopAt?: StopPoints): Promise<Advance | null> {
  await tx.runs.lock(runId);
  const run = await tx.runs.get(runId);
  if (!run || run.status !== 'running') return null;
  const now = await tx.now();
  let plan = await planRun(tx, run, now);
  const issued: string[] = [];
  if (plan.issue) {
    const { nodes, batch, notAfter } = plan.issue;
    stopAt?.('issue-before');
    for (const [k, nodeId] of nodes.entries()) {
      const attemptId = newAttemptId(run.id);
      if (await tx.runs.insertIssued(run.id, { nodeId, attemptId, issuedAt: now, notAfter, batch })) {
        issued.push(nodeId);
        log('issued run=%d app=%s version=%s node=%s attemptId=%s batch=%d notAfter=%s', run.id, run.app, run.version, nodeId, attemptId, batch, notAfter === null ? '-' : new Date(notAfter).toISOString());
      } else {
        log('run=%d node=%s already had an attempt of batch %d; not issued again', run.id, nodeId, batch);
      }
      if (k < nodes.length - 1) stopAt?.('issue-during');
    }
    plan = await planRun(tx, run, now);
    await desiredChanged(tx, issued);
  }
  if (planEnded(plan.status)) {
    // Its attempts leave the desired sets of the nodes that hold them.
    await desiredChanged(tx, inFlightNodes(plan));
    await tx.runs.end(run.id, plan.status, plan.haltReason, now);
    // Told in the same transaction as the end (docs/design.md §19): never lost, never invented.
    await emitRunEvent(tx, plan.status === 'succeeded' ? 'run.succeeded' : plan.status === 'halted' ? 'run.halted' : 'run.stopped', run.id);
    log('run=%d app=%s version=%s ended status=%s%s', run.id, run.app, run.version, plan.status, plan.haltReason ? ` halt=${plan.haltReason.code} ${plan.haltReason.message}` : '');
  }
  return { plan, issued };
}
