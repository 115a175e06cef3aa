// When a failed delivery is tried again: doubling from FIRST_RETRY_MS with each failed attempt,
// capped at MAX_RETRY_MS, with "equal jitter" (half the delay fixed, half random) so that the
// deliveries that failed together (a receiver down) do not come back together.
export const FIRST_RETRY_MS = 2_000;
export const MAX_RETRY_MS = 5 * 60_000;

// The wait after `attempts` failed attempts (1 = the first failed); `random` in [0, 1).
export function retryDelayMs(attempts: number, random: number): number {
  const full = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.min(30, Math.max(0, attempts - 1)));
  return Math.round(full / 2 + (full / 2) * Math.min(Math.max(random, 0), 1));
}
