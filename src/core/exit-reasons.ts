// Why an app's process ended, when steward knows more than its code or signal (docs/design.md §17):
// the OOM killer (the runner read it from the cgroup or the unit's result), the helper's
// watchdog (STEWARD_WATCHDOG_FD missed its deadline), or its liveness check (failureThreshold in a
// row). Status, heartbeats (v5), the metrics textfile and a watch window's rollback name it.
export const EXIT_REASONS = ['OOM', 'WATCHDOG', 'LIVENESS_FAILED'] as const;
export type ExitReason = (typeof EXIT_REASONS)[number];

export function isExitReason(v: unknown): v is ExitReason {
  return typeof v === 'string' && (EXIT_REASONS as readonly string[]).includes(v);
}

// How an exit with that reason reads in a sentence ("its process was killed by ...").
export function describeExitReason(reason: ExitReason): string {
  switch (reason) {
    case 'OOM':
      return 'killed by the OOM killer over its memoryMax (OOM)';
    case 'WATCHDOG':
      return 'killed by the watchdog, its event loop silent past watchdogMs (WATCHDOG)';
    case 'LIVENESS_FAILED':
      return 'stopped after failed liveness checks (LIVENESS_FAILED)';
  }
}
