// The dry run (docs/design.md §11): the planner played forward on its own clock as if every node it
// asks confirmed at once, through bakes, windows and the start time. Nothing else decides, so a
// real run started at once from the same facts issues the same batches in the same order.
import { planRollout, type Plan, type PlanInput, type RunStatus } from './rollout-planner.js';

export interface SimulatedBatch {
  // 0: the canaries; then 1, 2, ...
  batch: number;
  nodes: string[];
  // When it would be issued, and the end of its window (null without windows).
  at: number;
  notAfter: number | null;
}

export interface Simulation {
  // The plan at the start, as the real run's first plan.
  first: Plan;
  batches: SimulatedBatch[];
  // How the simulation ended: succeeded, or stuck (paused, no window ever) as the plan said.
  status: RunStatus;
  endsAt: number | null;
  // True when it stopped after `maxSteps` plans (a tiny batch over a huge fleet).
  truncated: boolean;
}

// Simulates `input`'s run from `input.now`. An analysed step (docs/design.md §19) passes at the end
// of its window: the dry run shows the waits an enforced analysis adds, never its verdicts.
export function simulateRollout(input: PlanInput, opts: { maxSteps?: number } = {}): Simulation {
  const maxSteps = opts.maxSteps ?? 2_000;
  const issued = [...input.issued];
  const verdicts = [...input.verdicts];
  const analysis = input.analysis ? { ...input.analysis, judgements: [...input.analysis.judgements] } : undefined;
  let now = input.now;
  const first = planRollout(input);
  const batches: SimulatedBatch[] = [];
  let plan = first;
  for (let step = 0; step < maxSteps; step++) {
    plan = step === 0 ? first : planRollout({ ...input, issued, verdicts, now, ...(analysis ? { analysis } : {}) });
    if (analysis && plan.analysisDue.length > 0) {
      for (const due of plan.analysisDue) analysis.judgements.push({ step: due.step, verdict: 'pass', at: now, summary: 'dry run', resumed: false });
      continue;
    }
    if (plan.issue) {
      batches.push({ batch: plan.issue.batch, nodes: plan.issue.nodes, at: now, notAfter: plan.issue.notAfter });
      for (const nodeId of plan.issue.nodes) {
        const attemptId = `dry-run-${nodeId}`;
        issued.push({ nodeId, attemptId, issuedAt: now, notAfter: plan.issue.notAfter, batch: plan.issue.batch });
        verdicts.push({ nodeId, attemptId, outcome: 'active', reasonCode: null, at: now });
      }
      continue;
    }
    if (plan.status === 'succeeded' || plan.status === 'halted' || plan.status === 'stopped') return { first, batches, status: plan.status, endsAt: now, truncated: false };
    if (plan.wakeAt === null) return { first, batches, status: plan.status, endsAt: null, truncated: false };
    now = plan.wakeAt;
  }
  return { first, batches, status: plan.status, endsAt: null, truncated: true };
}
