import { readdirSync, readFileSync, statSync } from 'node:fs';
import { isSameProcessAliveSync } from '../../platform/proc-identity.js';
import { cgroupPids } from './app-cgroup.js';
import { ownedGroup, readProcStatSync } from './process-group.js';
import type { AppTarget } from './runner.js';

// The processes of one app, found only by a proof that nothing but steward could have given them
// (docs/design.md §5), and only when they run as the app's own user:
// - the recorded main process (pid, start time and boot of the run record);
// - a member of its process group (the group's id is held while anyone is in it);
// - a process in the app's cgroup, where the detached runner has one (app-cgroup.ts);
// - else a process whose environment holds the app's instance token (STEWARD_INSTANCE), a
//   secret that only root and the app's own processes know (the record is root's, 0600, and a
//   process's environment is readable by its own user and root only).
// A working folder, a command name or a session proves nothing: anyone can have those.
// Everything here is synchronous: /proc never waits on a disk, and a respawn waits on this.

// A process found, with its start time: signalled only while it is still that process.
export interface Member {
  pid: number;
  startTicks: number;
}

export interface MemberSources {
  // The app's cgroup, when the runner starts the app in one: every process there is the app's.
  cgroupDir: string | null;
  // Whether to look for the instance token in the environment of every process of the app's
  // user (without a cgroup to trust; a /proc scan).
  scanEnviron: boolean;
  // Whether the main process was born in the cgroup (the runner spawned it there): then every
  // member of its group is too (a group lives inside its session, whose leader it is, and
  // everything it forks is born where it is), and the group needs no /proc scan of its own.
  groupInCgroup?: boolean;
}

// Every live process of `target` that one of the proofs above holds for, the helper excluded.
export function findAppMembers(target: AppTarget, sources: MemberSources): Member[] {
  const found = new Map<number, Member>();
  const add = (pid: number, startTicks: number) => {
    if (pid !== process.pid && !found.has(pid) && runsAs(pid, target.uid)) found.set(pid, { pid, startTicks });
  };
  const live = (pid: number) => {
    const st = readProcStatSync(pid);
    return st && st.state !== 'Z' && st.state !== 'X' ? st : null;
  };
  if (target.process && isSameProcessAliveSync(target.process)) add(target.process.pid, target.process.startTicks);
  if (sources.cgroupDir) {
    for (const pid of cgroupPids(sources.cgroupDir)) {
      const st = live(pid);
      if (st) add(pid, st.startTicks);
    }
  }
  const pgid = target.process && !(sources.cgroupDir && sources.groupInCgroup) ? ownedGroup(target.process) : null;
  const token = sources.scanEnviron && target.instance ? Buffer.from(`STEWARD_INSTANCE=${target.instance}\0`) : null;
  if (pgid === null && token === null) return [...found.values()];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (found.has(pid)) continue;
    const st = live(pid);
    if (!st) continue;
    if (st.pgid === pgid || (token !== null && mayBeOf(pid, target.uid) && holdsEnv(pid, token))) add(pid, st.startTicks);
  }
  return [...found.values()];
}

// Whether every uid of the process (real, effective, saved, file system) is `uid`: a setuid
// program the app ran, or a process that merely looks like the app's, is another user's.
export function runsAs(pid: number, uid: number): boolean {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return false;
  }
  const m = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$/m.exec(text);
  return m !== null && m.slice(1).every((u) => Number(u) === uid);
}

// A cheap first look: /proc/<pid> belongs to the process's effective user, or to root when the
// process is not dumpable (then its uids are read anyway).
function mayBeOf(pid: number, uid: number): boolean {
  try {
    const owner = statSync(`/proc/${pid}`).uid;
    return owner === uid || owner === 0;
  } catch {
    return false;
  }
}

// Whether the process's environment holds `entry` ("NAME=value\0") as a whole variable.
function holdsEnv(pid: number, entry: Buffer): boolean {
  let env: Buffer;
  try {
    env = readFileSync(`/proc/${pid}/environ`);
  } catch {
    return false;
  }
  for (let at = env.indexOf(entry); at >= 0; at = env.indexOf(entry, at + 1)) {
    if (at === 0 || env[at - 1] === 0) return true;
  }
  return false;
}
