import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statfsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../../core/errors.js';
import { logger } from '../../platform/log.js';

const debug = logger('helper:runner');

// Each app of the detached runner in a cgroup of its own, where the helper can make one: the
// proof that a process is the app's (only root can move a process into or out of a root-owned
// cgroup, and a process's children are born in it), and the way to find everything the app
// started once its main process has ended. Without one (not root, a read-only or missing
// cgroup2 file system, or systemd as PID 1, which owns the tree), the instance token alone
// is the proof (app-members.ts).

const CGROUP2_SUPER_MAGIC = 0x63677270;
// Where a cgroup2 hierarchy is mounted: the unified layout, then the hybrid one.
const MOUNTS = ['/sys/fs/cgroup', '/sys/fs/cgroup/unified'];

// The cgroups of one host's apps: <mount>/steward/<app> for the production layout; a test or demo
// host (a root prefix) gets <mount>/steward/<hash>.prefix/<app>, so that hosts on one machine
// never share an app's cgroup ('.' is in no app name).
export interface CgroupHome {
  mount: string;
  dir: string;
}

// The cgroup home of the host with root prefix `rootPrefix`, or null when none can be made here.
// It makes <mount>/steward (where a cgroup cannot be made, there is none); the folders below
// are made by the first spawn that needs them and removed once empty.
export function findCgroupHome(rootPrefix: string): CgroupHome | null {
  if (process.getuid?.() !== 0) return null;
  // Under systemd the tree is systemd's, and apps run as transient units (or, configured
  // detached, in the helper unit's cgroup, which ProtectControlGroups= makes read-only).
  if (existsSync('/run/systemd/system')) return null;
  for (const mount of MOUNTS) {
    if (!isCgroup2(mount) || ownCgroup(mount) === null) continue;
    const top = path.join(mount, 'steward');
    try {
      mkdirSync(top, { mode: 0o755 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
        debug('no app cgroups under %s: %s', mount, (err as Error).message);
        continue;
      }
    }
    const dir = rootPrefix === '' ? top : path.join(top, `${createHash('sha256').update(rootPrefix).digest('hex').slice(0, 16)}.prefix`);
    return { mount, dir };
  }
  return null;
}

function isCgroup2(mount: string): boolean {
  try {
    return statfsSync(mount).type === CGROUP2_SUPER_MAGIC;
  } catch {
    return false;
  }
}

// This process's cgroup in the cgroup2 hierarchy (the "0::" line of /proc/self/cgroup), as a
// folder under `mount`, or null when it has none.
function ownCgroup(mount: string): string | null {
  let text: string;
  try {
    text = readFileSync('/proc/self/cgroup', 'utf8');
  } catch {
    return null;
  }
  const line = text.split('\n').find((l) => l.startsWith('0::'));
  return line ? path.join(mount, line.slice(3)) : null;
}

// The cgroup of `app` under `home`.
export function appCgroupDir(home: CgroupHome, app: string): string {
  return path.join(home.dir, app);
}

// Moves this process into cgroup `dir` (made if missing) for a spawn, and returns the cgroup to
// go back to (leaveCgroup) right after the synchronous child_process.spawn: the child is forked
// inside, before any code of the app runs, so none of its own children can be born outside it.
// Both calls and the spawn between them are synchronous, so no other code of the helper runs
// while it is in there.
export function enterCgroup(home: CgroupHome, dir: string): string {
  const own = ownCgroup(home.mount);
  if (own === null) throw new Error('this process is in no cgroup2 cgroup');
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  writeFileSync(path.join(dir, 'cgroup.procs'), String(process.pid));
  return own;
}

// Moves this process back to `own` (from enterCgroup). Why at once: the helper must never be
// in an app's cgroup when it spawns another app's process.
export function leaveCgroup(own: string): void {
  try {
    writeFileSync(path.join(own, 'cgroup.procs'), String(process.pid));
  } catch (err) {
    throw new StewardError('INTERNAL', `the helper could not move back to its cgroup ${own}: ${(err as Error).message}`, { cause: err });
  }
}

// The pids in cgroup `dir` ([] when it does not exist). The app cannot make cgroups below it
// (the folder is root's), so this file lists all of them.
export function cgroupPids(dir: string): number[] {
  let text: string;
  try {
    text = readFileSync(path.join(dir, 'cgroup.procs'), 'utf8');
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const line of text.split('\n')) if (/^\d+$/.test(line)) out.push(Number(line));
  return out;
}

// Removes the empty cgroup `dir` (and, for a prefixed host, its home once that is empty too);
// a cgroup that still holds a process stays. Why: a cgroup left behind by every test host
// would pile up in the machine's hierarchy.
export function removeAppCgroup(home: CgroupHome, dir: string): void {
  for (const d of [dir, ...(isPrefixed(home) ? [home.dir] : [])]) {
    try {
      rmdirSync(d);
    } catch {
      return;
    }
  }
}

// Removes a prefixed host's empty cgroups (a test host's cleanup, whose apps were killed
// without a stop); a cgroup that still holds a process stays.
export function removeCgroupHome(home: CgroupHome): void {
  if (!isPrefixed(home)) return;
  let apps: string[];
  try {
    apps = readdirSync(home.dir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
  } catch {
    return;
  }
  for (const app of apps) removeAppCgroup(home, path.join(home.dir, app));
  removeAppCgroup(home, home.dir);
}

function isPrefixed(home: CgroupHome): boolean {
  return home.dir.endsWith('.prefix');
}
