import type { AppState } from './state-schemas.js';

export interface QuarantinePolicy {
  baseMs: number;
  capMs: number;
}

// The quarantine entry after a failed attempt of `version` (DESIGN §4 "Blame"). When the
// new version is to blame (`raise`), its failure count goes up and it waits
// min(capMs, baseMs * 2^failures): 5 min, 10 min, 20 min ... 24 h. When the environment is
// suspect, a retryAfter is set from the current count, which is not raised.
export function nextQuarantine(
  state: AppState,
  version: string,
  policy: QuarantinePolicy,
  now: number,
  raise: boolean,
): { failures: number; retryAfter: number } {
  const failures = state.quarantine[version]?.failures ?? 0;
  const wait = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(failures, 40));
  return { failures: raise ? failures + 1 : failures, retryAfter: now + wait };
}
