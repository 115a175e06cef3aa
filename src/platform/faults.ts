// The fault seam for crash and fault tests: named points in the helper where a test can make
// it die with SIGKILL, or make one step of a durable write fail with an errno. Inert unless
// STEWARD_FAULTS is set AND the root prefix is not empty, so a production helper (no prefix)
// can never be made to kill itself or fail a write.
//
// STEWARD_FAULTS is a comma-separated list of:
// - "point" or "point@N": die with SIGKILL the Nth time (default the 1st) the point is reached;
// - "enospc:<write point>": that verdict write fails with ENOSPC (every time);
// - "<errno>:<op>:<io point>" or "...@N": step <op> of a durable write at <io point> fails
//   with <errno> (enospc or eio), every time, or only the Nth time with @N. A full disk stays
//   full; @N picks one write of several (journal@1 is `activating`, journal@2 the verdict).
// Each time a point is reached with the seam active, a line `steward-fault-reached <point> <n>`
// is written to stderr first (and `steward-fault-io <errno> <op> <point> <n>` when an I/O
// fault fires), so a test sees it pass.
export interface Faults {
  // Called at a named point; may not return (SIGKILL).
  hit(point: FaultPoint): void;
  // Called before a durable write; throws ENOSPC when the seam says `enospc:<point>`.
  write(point: WriteFaultPoint): void;
  // Called before each step of a durable write at `point`; throws the planned errno.
  io(point: IoFaultPoint, op: IoFaultOp): void;
}

// Writes that a test can make fail with ENOSPC: the verdict of an activation, and the
// verdict of its rollback.
export const WRITE_FAULT_POINTS = ['verdict', 'rollback-verdict'] as const;
export type WriteFaultPoint = (typeof WRITE_FAULT_POINTS)[number];

// Durable writes whose steps a test can make fail: the journal, the app state, the receipts
// (receipts file and seq file), the `current` symlink swap, the staging of a release (archive
// bytes, syncfs, rename into versions/, fsync of versions/) and its marker, and the file objects
// of a stage (docs/design.md §20: write is each object written or linked, rename each put in place).
export const IO_FAULT_POINTS = ['journal', 'state', 'receipt', 'current', 'staging', 'marker', 'objects'] as const;
export type IoFaultPoint = (typeof IO_FAULT_POINTS)[number];
// write: the data (or the symlink) is written; fsync: the file (or file system) is synced;
// rename: the temp name is renamed over the real one; fsyncdir: the folder is synced after it.
export const IO_FAULT_OPS = ['write', 'fsync', 'rename', 'fsyncdir'] as const;
export type IoFaultOp = (typeof IO_FAULT_OPS)[number];
const IO_ERRNOS: Record<string, { code: string; text: string }> = {
  enospc: { code: 'ENOSPC', text: 'no space left on device' },
  eio: { code: 'EIO', text: 'input/output error' },
};

// Called before each step of one durable write; throws to make that step fail.
export type IoStep = (op: IoFaultOp) => void;

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
  // A stage's file objects (docs/design.md §20): killed halfway through filing a tree's files as
  // objects (or linking a tree from them), and before the tree's rename into versions/.
  'during-objects',
  'after-objects-before-rename',
  // The handover of an app with sockets (update/handover.ts): each after its journal phase.
  'after-handover-start',
  'after-handover-ready',
  'after-handover-drain',
] as const;
export type FaultPoint = (typeof FAULT_POINTS)[number];

export const noFaults: Faults = { hit: () => {}, write: () => {}, io: () => {} };

// The steps of one durable write at `point`, for fs-atomic's `step` hook.
export function ioStep(faults: Faults, point: IoFaultPoint): IoStep {
  return (op) => faults.io(point, op);
}

// The seam from the environment; `noFaults` unless STEWARD_FAULTS is set and `root` is not ''.
export function faultsFromEnv(env: NodeJS.ProcessEnv, root: string): Faults {
  const spec = env.STEWARD_FAULTS;
  if (!spec || !root) return noFaults;
  const plan = new Map<string, number>();
  // I/O faults by "<op>:<point>": the errno and the one occurrence (0 = every time).
  const ioPlan = new Map<string, { errno: string; nth: number }>();
  for (const part of spec.split(',').map((s) => s.trim()).filter(Boolean)) {
    const [name, nth] = part.split('@') as [string, string | undefined];
    const fields = name.split(':');
    if (fields.length === 3 && IO_ERRNOS[fields[0] as string]) {
      ioPlan.set(`${fields[1]}:${fields[2]}`, { errno: fields[0] as string, nth: nth ? Math.max(1, Number(nth) || 1) : 0 });
      continue;
    }
    plan.set(name, nth ? Math.max(1, Number(nth) || 1) : 1);
  }
  const seen = new Map<string, number>();
  const count = (key: string) => {
    const n = (seen.get(key) ?? 0) + 1;
    seen.set(key, n);
    return n;
  };
  return {
    write(point) {
      if (!plan.has(`enospc:${point}`)) return;
      process.stderr.write(`steward-fault-enospc ${point}\n`);
      throw Object.assign(new Error(`no space left on device (injected at ${point})`), { code: 'ENOSPC' });
    },
    io(point, op) {
      const key = `${op}:${point}`;
      const planned = ioPlan.get(key);
      if (!planned) return;
      const n = count(`io:${key}`);
      if (planned.nth !== 0 && planned.nth !== n) return;
      const errno = IO_ERRNOS[planned.errno] as { code: string; text: string };
      process.stderr.write(`steward-fault-io ${planned.errno} ${op} ${point} ${n}\n`);
      throw Object.assign(new Error(`${errno.text} (injected at ${op} of ${point})`), { code: errno.code, syscall: op });
    },
    hit(point) {
      const n = count(point);
      process.stderr.write(`steward-fault-reached ${point} ${n}\n`);
      if (plan.get(point) === n) {
        process.stderr.write(`steward-fault-kill ${point}\n`);
        process.kill(process.pid, 'SIGKILL');
      }
    },
  };
}
