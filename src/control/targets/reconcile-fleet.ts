// One round of the control plane's standing wishes (docs/design.md §18), run by the rollout ticker
// after it advanced the runs: node pins past their `until` are lifted (and audited), pinned
// versions are carried to their nodes, then every target takes a reconcile step.
import { logger } from '../../platform/log.js';
import type { ControlStore } from '../store/store.js';
import { carryPins, liftExpiredPins } from './pins.js';
import { reconcileTargets } from './reconcile-target.js';

const log = logger('control:targets');

// Runs one round; a failure of one part is logged and does not stop the others.
export async function reconcileFleet(store: ControlStore): Promise<void> {
  const steps: Array<[string, () => Promise<unknown>]> = [
    ['lifting expired pins', () => liftExpiredPins(store)],
    ['carrying pins', () => carryPins(store)],
    ['reconciling targets', () => reconcileTargets(store)],
  ];
  for (const [what, step] of steps) {
    try {
      await step();
    } catch (err) {
      log('%s failed: %s', what, (err as Error)?.message ?? String(err));
    }
  }
}
