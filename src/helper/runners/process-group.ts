import { promises as fsp, readFileSync } from 'node:fs';
import { StewardError } from '../../core/errors.js';
import type { Clock } from '../../platform/clock.js';
import { readBootId, readProcIdentity, type ProcIdentity } from '../../platform/proc-identity.js';
import { logger } from '../../platform/log.js';

const debug = logger('helper:runner');

export interface ProcStat {
  state: string;
  pgid: number;
  sid: number;
}

// State, process group and session of a pid from /proc/<pid>/stat, or null when it is gone.
// Fields are counted after the LAST ')': the command name may hold ')' or spaces.
export async function readProcStat(pid: number): Promise<ProcStat | null> {
  let text: string;
  try {
    // Synchronous: see readProcIdentity (/proc never waits on a disk; no thread-pool wakeups).
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const f = text.slice(text.lastIndexOf(')') + 1).trim().split(/\s+/);
  const pgid = Number(f[2]);
  const sid = Number(f[3]);
  if (!f[0] || !Number.isSafeInteger(pgid) || !Number.isSafeInteger(sid)) return null;
  return { state: f[0], pgid, sid };
}

// Pids of the live members of process group `pgid`; zombies are dead and are left out.
export async function listGroupMembers(pgid: number): Promise<number[]> {
  const out: number[] = [];
  for (const name of await fsp.readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const st = await readProcStat(Number(name));
    if (st && st.pgid === pgid && st.state !== 'Z' && st.state !== 'X') out.push(Number(name));
  }
  return out;
}

// The process group id to signal for a recorded process, or null when nothing is provably ours.
// Linux never hands out a pid while it is still the id of a live process group, so:
// - /proc/<pid> with the recorded start time and boot: the leader itself, its group is ours;
// - no /proc/<pid>: any process still in group <pid> is from our group (the number is held);
// - /proc/<pid> with another start time: the pid was reused, our group is gone.
export async function ownedGroup(identity: ProcIdentity): Promise<number | null> {
  const { pid } = identity;
  if (!Number.isSafeInteger(pid) || pid <= 1) return null;
  if (identity.bootId !== (await readBootId())) {
    debug('not signalling a process of another boot pid=%d', pid);
    return null;
  }
  const now = await readProcIdentity(pid);
  if (now === null) {
    // The usual case on a respawn: the leader was reaped and its group is empty. kill(2) answers
    // for the whole group at once, so the /proc scan (tens of ms on a loaded host, and on the
    // respawn path before the new spawn) runs only when the group still has someone in it.
    if (!groupHasAnyone(pid)) return null;
    return (await listGroupMembers(pid)).length > 0 ? pid : null;
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

// Sends `signal` to every member of group `pgid`; false when the group has no member left.
function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

// Polls until group `pgid` has no live member or `deadline` (monotonic) passes; true when gone.
async function waitGroupGone(pgid: number, deadline: number, clock: Clock, pollMs: number): Promise<boolean> {
  for (;;) {
    // kill(0) is cheap; a group of zombies only still answers it, so then scan /proc.
    if (!signalGroup(pgid, 0) || (await listGroupMembers(pgid)).length === 0) return true;
    const left = deadline - clock.monotonic();
    if (left <= 0) return false;
    await clock.sleep(Math.min(pollMs, left));
  }
}

export interface StopGroupOptions {
  clock: Clock;
  timeoutMs: number;
  // How long to wait for the group to vanish after SIGKILL before giving up.
  killWaitMs?: number;
  pollMs?: number;
}

// Stops the process group of a recorded process: SIGTERM, SIGKILL after timeoutMs, then waits
// until no member is left. Nothing provably ours running is success.
export async function stopProcessGroup(identity: ProcIdentity, opts: StopGroupOptions): Promise<void> {
  const { clock, timeoutMs } = opts;
  const pollMs = opts.pollMs ?? 50;
  const pgid = await ownedGroup(identity);
  if (pgid === null) return;
  // Why SIGTERM to the whole group: the app's own children must stop with it.
  debug('stopping process group pgid=%d signal=SIGTERM timeoutMs=%d', pgid, timeoutMs);
  if (!signalGroup(pgid, 'SIGTERM')) return;
  if (await waitGroupGone(pgid, clock.monotonic() + timeoutMs, clock, pollMs)) return;
  // Why SIGKILL: a member ignored SIGTERM for timeoutMs. The group still has live members,
  // so its id cannot have been reused in between.
  debug('process group outlived SIGTERM, killing pgid=%d', pgid);
  if (!signalGroup(pgid, 'SIGKILL')) return;
  if (await waitGroupGone(pgid, clock.monotonic() + (opts.killWaitMs ?? 5000), clock, pollMs)) return;
  throw new StewardError('INTERNAL', `process group ${pgid} is still running after SIGKILL`);
}
