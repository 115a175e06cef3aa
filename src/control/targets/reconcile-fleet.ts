// One round of the control plane's standing wishes (docs/design.md §18), run by the rollout ticker
// after it advanced the runs: node pins past their `until` are lifted (and audited), then every
// target takes a reconcile step.
import type { ControlStore } from '../store/store.js';
import { reconcileTargets } from './reconcile-target.js';

// Runs one round; a failure of one part is logged by it and does not stop the others.
export async function reconcileFleet(store: ControlStore): Promise<void> {
  await reconcileTargets(store);
}
