// The store-reading entry point of the judgement (docs/design.md §19, "Judgement"): the planner calls
// it once a step's window has elapsed; it reads the cohorts' samples and hands them to the pure
// judgement (judge-cohorts.ts).
import type { ControlStore, SignalSample } from '../store/store.js';
import { judgeCohorts, type CohortInput } from './judge-cohorts.js';
import type { Judgement } from './judgement.js';
import { nodeIncrease } from './node-increase.js';
import type { AnalysisPolicy } from './policy.js';

export interface JudgeStepInput {
  app: string;
  canaryNodeIds: string[];
  baselineNodeIds: string[];
  from: Date;
  to: Date;
  policy: AnalysisPolicy;
  // When given, only samples taken at these versions count (a canary's minutes before its switch
  // are not the new version's). The run's version and the one it replaces.
  canaryVersion?: string;
  baselineVersion?: string | null;
}

// Judges one step over [from, to): the canary cohort against the baseline, from the stored samples.
export async function judgeStep(store: ControlStore, input: JudgeStepInput): Promise<Judgement> {
  const from = input.from.getTime();
  const to = input.to.getTime();
  const [canary, baseline] = await store.read(async (tx) => [
    await tx.signals.window(input.app, input.canaryNodeIds, from, to),
    await tx.signals.window(input.app, input.baselineNodeIds, from, to),
  ]);
  return judgeCohorts({
    canary: cohortInput(input.canaryNodeIds, canary, input.canaryVersion),
    baseline: cohortInput(input.baselineNodeIds, baseline, input.baselineVersion),
    from,
    to,
    policy: input.policy,
  });
}

// Each node's increase from its samples (which come by nodeId, then time).
export function cohortInput(nodeIds: readonly string[], samples: readonly SignalSample[], version?: string | null): CohortInput {
  const byNode = new Map<string, SignalSample[]>();
  for (const s of samples) {
    let list = byNode.get(s.nodeId);
    if (!list) byNode.set(s.nodeId, (list = []));
    list.push(s);
  }
  const unique = [...new Set(nodeIds)];
  return { nodeIds: unique, increases: new Map(unique.map((id) => [id, nodeIncrease(byNode.get(id) ?? [], version)])) };
}
