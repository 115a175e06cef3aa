// When a node counts as heard from (docs/design.md §9, §12): its last accepted heartbeat is
// within this many heartbeat intervals. The one rule behind a run's `skipped` nodes, the metrics'
// `stale` nodes and the dashboard's `stale` flag, so that the three never disagree about a node.
export const FRESH_HEARTBEAT_INTERVALS = 3;

// The oldest last-heartbeat time that is still fresh at `now`, with heartbeats every `intervalMs`.
export function freshSince(now: number, intervalMs: number): number {
  return now - FRESH_HEARTBEAT_INTERVALS * intervalMs;
}

// Whether a node whose last accepted heartbeat was at `lastHeartbeatAt` (null: never) is fresh at `now`.
export function heartbeatFresh(lastHeartbeatAt: number | null, now: number, intervalMs: number): boolean {
  return lastHeartbeatAt !== null && lastHeartbeatAt >= freshSince(now, intervalMs);
}
