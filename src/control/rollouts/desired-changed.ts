// The one seam through which a change of what nodes are asked to run reaches them at once
// (docs/design.md §18, wake-ups): whatever changes a node's desired set (a run issuing to it, a run
// that ends while it holds one of its attempts, a pause or a resume) calls desiredChanged in the
// same transaction. Once that transaction commits, every instance answers the wake-up wait
// (`GET /v1/wait`) each of these nodes holds, and the node heartbeats for its new desired set.
// Nothing is sent when the transaction rolls back. A missed call only delays: the node's next
// heartbeat carries the same answer.
import type { Plan } from '../../core/rollout-planner.js';
import type { StoreTx } from '../store/store.js';

// Wakes the nodes `nodeIds` once the caller's transaction commits. Idempotent within a
// transaction; no node, no wake.
export async function desiredChanged(tx: StoreTx, nodeIds: Iterable<string>): Promise<void> {
  const ids = [...new Set(nodeIds)];
  if (ids.length > 0) await tx.wakeNodes(ids);
}

// The nodes of a plan that hold one of its run's attempts now (issued, no verdict yet): those
// whose desired set names the run.
export function inFlightNodes(plan: Plan): string[] {
  return Object.entries(plan.nodes).filter(([, n]) => n.state === 'issued').map(([id]) => id);
}
