// The imperative layer around the planner: plan a run, record the attempts it issues before any
// is sent, and record its end once.
import { randomBytes } from 'node:crypto';
import type { Plan } from '../../core/rollout-planner.js';
import { logger } from '../../platform/log.js';
import type { StoreTx } from '../store/store.js';
import { planRun } from './plan-run.js';

const log = logger('control:rollouts');

// A fresh attemptId for one issue of a run: r<runId>-<16 hex>, within ATTEMPT_ID_RE.
export function newAttemptId(runId: number): string {
  return `r${runId}-${randomBytes(8).toString('hex')}`;
}

// Advances one run at the store's time, inside the caller's write transaction. Returns the plan
// after it (the issued nodes show as issued), or null when the run has ended.
export async function advanceRun(tx: StoreTx, runId: number): Promise<Plan | null> {
  const run = await tx.runs.get(runId);
  if (!run || run.status !== 'running') return null;
  const now = await tx.now();
  let plan = await planRun(tx, run, now);
  if (plan.issue) {
    const { nodes, batch, notAfter } = plan.issue;
    for (const nodeId of nodes) {
      const attemptId = newAttemptId(run.id);
      await tx.runs.insertIssued(run.id, { nodeId, attemptId, issuedAt: now, notAfter, batch });
      log('issued run=%d app=%s version=%s node=%s attemptId=%s batch=%d notAfter=%s', run.id, run.app, run.version, nodeId, attemptId, batch, notAfter === null ? '-' : new Date(notAfter).toISOString());
    }
    plan = await planRun(tx, run, now);
  }
  if (plan.status === 'succeeded' || plan.status === 'halted' || plan.status === 'stopped') {
    await tx.runs.end(run.id, plan.status, plan.haltReason, now);
    log('run=%d app=%s version=%s ended status=%s%s', run.id, run.app, run.version, plan.status, plan.haltReason ? ` halt=${plan.haltReason.code} ${plan.haltReason.message}` : '');
  }
  return plan;
}

// Advances every run that has not ended (the tick).
export async function advanceAllRuns(tx: StoreTx): Promise<void> {
  for (const run of await tx.runs.activeAll()) await advanceRun(tx, run.id);
}
