import { readFileSync } from 'node:fs';
import { readBootIdSync, type ProcIdentity } from '../../platform/proc-identity.js';
import { logger } from '../../platform/log.js';

const debug = logger('helper:runner');

export interface ProcStat {
  state: string;
  pgid: number;
  sid: number;
  // Field 22: the start time in clock ticks since boot.
  startTicks: number;
}

// State, process group, session and start time of a pid from /proc/<pid>/stat, or null when it
// is gone. Fields are counted after the LAST ')': the command name may hold ')' or spaces.
// Synchronous: see readProcIdentity (/proc never waits on a disk; no thread-pool wakeups).
export function readProcStatSync(pid: number): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const f = text.slice(text.lastIndexOf(')') + 1).trim().split(/\s+/);
  const pgid = Number(f[2]);
  const sid = Number(f[3]);
  const startTicks = Number(f[22 - 3]);
  if (!f[0] || !Number.isSafeInteger(pgid) || !Number.isSafeInteger(sid) || !Number.isSafeInteger(startTicks)) return null;
  return { state: f[0], pgid, sid, startTicks };
}

// readProcStatSync for callers that await.
export async function readProcStat(pid: number): Promise<ProcStat | null> {
  return readProcStatSync(pid);
}

// The process group id of a recorded process that is provably still ours, or null.
// Linux never hands out a pid while it is still the id of a live process group, so:
// - /proc/<pid> with the recorded start time and boot: the leader itself, its group is ours;
// - no /proc/<pid>: any process still in group <pid> is from our group (the number is held);
// - /proc/<pid> with another start time: the pid was reused, our group is gone.
export function ownedGroup(identity: ProcIdentity): number | null {
  const { pid } = identity;
  if (!Number.isSafeInteger(pid) || pid <= 1) return null;
  if (identity.bootId !== readBootIdSync()) {
    debug('not signalling a process of another boot pid=%d', pid);
    return null;
  }
  const now = readProcStatSync(pid);
  if (now === null) {
    // The usual case after an exit: the leader was reaped and its group is empty. kill(2) answers
    // for the whole group at once, so the /proc scan (tens of ms on a loaded host) is left to a
    // group that still has someone in it.
    return groupHasAnyone(pid) ? pid : null;
  }
  if (now.startTicks !== identity.startTicks) {
    debug('pid was reused, leaving it alone pid=%d recorded=%d now=%d', pid, identity.startTicks, now.startTicks);
    return null;
  }
  return pid;
}

// Whether any process, a zombie included, is in group `pgid` (kill -0; EPERM means someone is).
function groupHasAnyone(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
