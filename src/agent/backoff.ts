// The agent's timing decisions, pure: a random source in [0, 1) goes in, milliseconds come out.

export interface BackoffSettings {
  baseMs: number;
  capMs: number;
  // The fraction by which a delay may move either way (0.1 = ±10 %).
  jitter: number;
}

// docs/design.md §6: on failure a doubling backoff from 1 s to 5 min, with jitter.
export const HEARTBEAT_BACKOFF: BackoffSettings = { baseMs: 1000, capMs: 300_000, jitter: 0.1 };
// Relaying receipts the control plane rejected is retried on a slower cadence (1 min to 1 h):
// the heartbeats in between go without receipts so that the node stays visible.
export const RECEIPT_RETRY_BACKOFF: BackoffSettings = { baseMs: 60_000, capMs: 3_600_000, jitter: 0.1 };
// docs/design.md §6: the heartbeat interval moves by ±10 %.
export const INTERVAL_JITTER = 0.1;

// The wait after the `failures`-th failure in a row (1 for the first): base·2^(failures−1),
// at most capMs, moved by ±jitter, and never above capMs.
export function backoffDelayMs(failures: number, random: () => number, s: BackoffSettings = HEARTBEAT_BACKOFF): number {
  const n = Math.max(1, Math.floor(failures));
  // 2^40 is far past any cap; stops the exponent from overflowing to Infinity.
  const raw = Math.min(s.capMs, s.baseMs * 2 ** Math.min(n - 1, 40));
  return Math.min(s.capMs, Math.round(raw * (1 - s.jitter + 2 * s.jitter * clampUnit(random()))));
}

// The wait until the next heartbeat after a success: heartbeatSeconds ±10 %.
export function heartbeatIntervalMs(heartbeatSeconds: number, random: () => number, jitter = INTERVAL_JITTER): number {
  return Math.round(heartbeatSeconds * 1000 * (1 - jitter + 2 * jitter * clampUnit(random())));
}

function clampUnit(r: number): number {
  return Number.isFinite(r) ? Math.min(1, Math.max(0, r)) : 0.5;
}

// docs/design.md §13: "agents start their fetch after a jitter". A batch reaches its nodes at each one's
// next heartbeat; each then waits a random part of min(FETCH_JITTER_MAX_MS, a quarter of its
// heartbeat interval) before it hands the new entries to the helper (whose fetch follows), so
// the nodes of one batch do not all ask for their tarballs in the same second. A quarter keeps
// the wait well inside the interval; 10 s is the most a 30 s fleet waits.
export const FETCH_JITTER_MAX_MS = 10_000;
export function fetchJitterMs(heartbeatSeconds: number, random: () => number): number {
  return Math.round(Math.min(FETCH_JITTER_MAX_MS, (heartbeatSeconds * 1000) / 4) * clampUnit(random()));
}
