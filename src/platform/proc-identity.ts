import { readFileSync } from 'node:fs';

// Who a process is, beyond its pid (docs/design.md §5): pids are reused, so a process is
// the same one only if its start time (in clock ticks since boot) and the boot match.
export interface ProcIdentity {
  pid: number;
  startTicks: number;
  bootId: string;
}

// Parses /proc/<pid>/stat text and returns field 22 (starttime). The command name
// (field 2) is in parentheses and may itself hold ')' or spaces, so fields are
// counted from after the LAST ')'.
export function parseStartTicks(statText: string): number | null {
  const close = statText.lastIndexOf(')');
  if (close < 0) return null;
  // After ')' come fields 3, 4, ...; field 22 is the 20th of them.
  const fields = statText.slice(close + 1).trim().split(/\s+/);
  const raw = fields[22 - 3];
  if (raw === undefined || !/^\d+$/.test(raw)) return null;
  const ticks = Number(raw);
  return Number.isSafeInteger(ticks) ? ticks : null;
}

// The current boot's id from /proc/sys/kernel/random/boot_id. Read once per process: it cannot
// change while this process lives, and every identity check (a respawn's included) needs it.
// A failed read is not remembered: the next call tries again.
let bootId: string | null = null;
export function readBootIdSync(): string {
  bootId ??= readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  return bootId;
}

// readBootIdSync for callers that await.
export async function readBootId(): Promise<string> {
  return readBootIdSync();
}

// The identity of a live process, or null when no process has that pid.
export async function readProcIdentity(pid: number): Promise<ProcIdentity | null> {
  if (!Number.isSafeInteger(pid) || pid <= 0) return null;
  let text: string;
  try {
    // Synchronous: /proc is made by the kernel on read and never waits on a disk, and an async
    // read costs four thread-pool round trips, each waking an idle helper (issue 8, row 5).
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ESRCH') return null;
    throw err;
  }
  const startTicks = parseStartTicks(text);
  if (startTicks === null) return null;
  return { pid, startTicks, bootId: await readBootId() };
}

// Whether `recorded` names a process that is still running: same pid, same start
// time, same boot. A zombie counts as dead (it can hold nothing any more).
export async function isSameProcessAlive(recorded: ProcIdentity): Promise<boolean> {
  return isSameProcessAliveSync(recorded);
}

// isSameProcessAlive for synchronous code (app-members.ts).
export function isSameProcessAliveSync(recorded: ProcIdentity): boolean {
  if (!Number.isSafeInteger(recorded.pid) || recorded.pid <= 0 || recorded.bootId !== readBootIdSync()) return false;
  let text: string;
  try {
    text = readFileSync(`/proc/${recorded.pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  const state = text.slice(text.lastIndexOf(')') + 1).trim().split(/\s+/)[0];
  return parseStartTicks(text) === recorded.startTicks && state !== undefined && state !== 'Z' && state !== 'X';
}
