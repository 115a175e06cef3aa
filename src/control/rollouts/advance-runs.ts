// The imperative layer around the planner: plan a run, record the attempts it issues before any
// is sent, and record its end once.
import { randomBytes } from 'node:crypto';
import type { Plan } from '../../core/rollout-planner.js';
import { logger } from '../../platform/log.js';
import type { ControlStore } from '../store/open-store.js';
import { endRun, insertIssued, readRun, runningRuns } from '../store/runs.js';
import { planRun } from './plan-run.js';

const log = logger('control:rollouts');

// A fresh attemptId for one issue of a run: r<runId>-<16 hex>, within ATTEMPT_ID_RE.
export function newAttemptId(runId: number): string {
  return `r${runId}-${randomBytes(8).toString('hex')}`;
}

// Advances one running run at `now`; call inside a write transaction. Returns the plan after it
// (the issued nodes show as issued), or null when the run is not running.
export function advanceRun(store: ControlStore, runId: number, now: number): Plan | null {
  const run = readRun(store, runId);
  if (!run || run.status !== 'running') return null;
  let plan = planRun(store, run, now);
  if (plan.issue.length > 0) {
    for (const nodeId of plan.issue) {
      const attemptId = newAttemptId(run.id);
      insertIssued(store, run.id, { nodeId, attemptId, issuedAt: now });
      log('issued run=%d app=%s version=%s node=%s attemptId=%s', run.id, run.app, run.version, nodeId, attemptId);
    }
    plan = planRun(store, run, now);
  }
  if (plan.status !== 'running') {
    endRun(store, run.id, plan.status, plan.haltReason, now);
    log('run=%d app=%s version=%s ended status=%s%s', run.id, run.app, run.version, plan.status, plan.haltReason ? ` halt=${plan.haltReason.code} ${plan.haltReason.message}` : '');
  }
  return plan;
}

// Advances every running run; call inside a write transaction. Returns how many are still
// running after it (0: no run can have an open attempt for any node).
export function advanceAllRuns(store: ControlStore, now: number): number {
  let running = 0;
  for (const run of runningRuns(store)) if (advanceRun(store, run.id, now)?.status === 'running') running++;
  return running;
}
