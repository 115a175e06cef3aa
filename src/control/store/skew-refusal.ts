// A node's clock skew refusal as both backends store it: three nullable columns of the nodes
// table (skewRefusedSince, skewRefusedAt, skewRefusedMs; store migration 5). A record counts only
// while it is not older than the node's last accepted heartbeat: an accepted heartbeat clears it,
// and one accepted by a steward-control of schema 4 (which does not know the columns) makes it
// stale all the same.
import type { ClockSkewRefusal } from './store.js';

export interface SkewRefusalColumns {
  lastHeartbeatAt: number | null;
  skewRefusedSince: number | null;
  skewRefusedAt: number | null;
  skewRefusedMs: number | null;
}

// The refusal the columns hold, or null when none counts.
export function skewRefusalOf(c: SkewRefusalColumns): ClockSkewRefusal | null {
  if (c.skewRefusedSince === null || c.skewRefusedAt === null || c.skewRefusedMs === null) return null;
  if (c.lastHeartbeatAt !== null && c.skewRefusedAt < c.lastHeartbeatAt) return null;
  return { since: c.skewRefusedSince, lastAt: c.skewRefusedAt, clockSkewMs: c.skewRefusedMs };
}

type Stored = 'skewRefusedSince' | 'skewRefusedAt' | 'skewRefusedMs';

// A node row without the three columns, with the refusal they hold.
export function withSkewRefusal<R extends SkewRefusalColumns>(r: R): Omit<R, Stored> & { clockSkewRefused: ClockSkewRefusal | null } {
  const { skewRefusedSince: _s, skewRefusedAt: _a, skewRefusedMs: _m, ...rest } = r;
  return { ...rest, clockSkewRefused: skewRefusalOf(r) };
}
