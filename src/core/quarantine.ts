import type { AppState } from './state-schemas.js';

export interface QuarantinePolicy {
  baseMs: number;
  capMs: number;
}

// The quarantine entry after a failed attempt of `version` (docs/design.md §4 "Blame"). When the
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

// Whether a quarantine entry holds a version back at `now`: its retryAfter is still ahead, and no
// further ahead than `capMs`. A retryAfter beyond the cap cannot come from a steady clock (it was
// stamped before the clock went back) and is not trusted, as a persisted time in the future counts
// as now (docs/design.md §5). The stage refusal, `status` and `releases` all answer with this one test.
export function quarantineInForce(q: { retryAfter: number } | undefined, now: number, capMs: number): boolean {
  return q !== undefined && q.retryAfter > now && q.retryAfter <= now + capMs;
}

// How a quarantine entry's failures read in a sentence. `failures` counts only the failures
// blamed on the version (docs/design.md §4, "Blame"): a first install that failed, or one whose rollback
// failed too, is quarantined with 0, and must not read "failed 0 time(s)".
export function describeFailures(failures: number): string {
  if (failures <= 0) return 'failed where the failure was not counted against it (a first install, or the version before it failed too)';
  return failures === 1 ? 'failed once' : `failed ${failures} times`;
}
