// The fault seam for crash tests: named points in the helper where a test can make it
// die with SIGKILL. Inert unless STEWARD_FAULTS is set AND the root prefix is not empty,
// so a production helper (no prefix) can never be made to kill itself.
//
// STEWARD_FAULTS="point" or "point@N" (die the Nth time the point is reached),
// "enospc:<write point>" (that write fails with ENOSPC), or a comma-separated list. Each time a point is reached with the seam active, a line
// `steward-fault-reached <point>` is written to stderr first, so a test sees it pass.
export interface Faults {
  // Called at a named point; may not return (SIGKILL).
  hit(point: FaultPoint): void;
  // Called before a durable write; throws ENOSPC when the seam says `enospc:<point>`.
  write(point: WriteFaultPoint): void;
}

// Writes that a test can make fail with ENOSPC: the verdict of an activation, and the
// verdict of its rollback.
export const WRITE_FAULT_POINTS = ['verdict', 'rollback-verdict'] as const;
export type WriteFaultPoint = (typeof WRITE_FAULT_POINTS)[number];

export const FAULT_POINTS = [
  'after-journal-activating',
  'after-stop-old',
  'after-symlink-before-rename',
  'after-rename-before-fsync',
  'after-start-new',
  'during-probe',
  'after-verdict-state',
  'after-verdict-before-receipt',
  'after-receipt-before-prune',
  'during-prune',
  'during-swap-back',
] as const;
export type FaultPoint = (typeof FAULT_POINTS)[number];

export const noFaults: Faults = { hit: () => {}, write: () => {} };

// The seam from the environment; `noFaults` unless STEWARD_FAULTS is set and `root` is not ''.
export function faultsFromEnv(env: NodeJS.ProcessEnv, root: string): Faults {
  const spec = env.STEWARD_FAULTS;
  if (!spec || !root) return noFaults;
  const plan = new Map<string, number>();
  for (const part of spec.split(',').map((s) => s.trim()).filter(Boolean)) {
    const [name, nth] = part.split('@');
    plan.set(name as string, nth ? Math.max(1, Number(nth) || 1) : 1);
  }
  const seen = new Map<string, number>();
  return {
    write(point) {
      if (!plan.has(`enospc:${point}`)) return;
      process.stderr.write(`steward-fault-enospc ${point}\n`);
      throw Object.assign(new Error(`no space left on device (injected at ${point})`), { code: 'ENOSPC' });
    },
    hit(point) {
      const n = (seen.get(point) ?? 0) + 1;
      seen.set(point, n);
      process.stderr.write(`steward-fault-reached ${point} ${n}\n`);
      if (plan.get(point) === n) {
        process.stderr.write(`steward-fault-kill ${point}\n`);
        process.kill(process.pid, 'SIGKILL');
      }
    },
  };
}
