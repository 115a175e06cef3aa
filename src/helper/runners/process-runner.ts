import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, constants as C, fstatSync, mkdirSync, openSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { StewardError, toStewardError } from '../../core/errors.js';
import type { Clock } from '../../platform/clock.js';
import { logger } from '../../platform/log.js';
import {
  isSameProcessAlive,
  parseStartTicks,
  readBootId,
  readBootIdSync,
  readProcIdentity,
  type ProcIdentity,
} from '../../platform/proc-identity.js';
import { buildAppEnv } from './app-env.js';
import { openChildFds } from './child-fds.js';
import { appCgroupDir, enterCgroup, leaveCgroup, removeAppCgroup, type CgroupHome } from './app-cgroup.js';
import { findAppMembers } from './app-members.js';
import { prepareAppMemory, removeAppMemory, type AppMemory, type MemoryHome } from './memory-cgroup.js';
import { readProcStat, readProcStatSync } from './process-group.js';
import { prepareStateDirSync } from './state-dir.js';
import { stopMembers } from './stop-members.js';
import type { AppRunner, AppTarget, ExitInfo, StartSpec, StartedProcess } from './runner.js';

const debug = logger('helper:runner');

export interface ProcessRunnerOptions {
  clock: Clock;
  isRoot: boolean;
  // Where each app gets a cgroup of its own (findCgroupHome); null or absent: none, and the
  // instance token in the environment is the proof of the app's processes (app-members.ts).
  cgroups?: CgroupHome | null;
  // Where the apps' memory cgroups are (findMemoryHome), or why there are none: an app with a
  // memoryMax is then refused its start. Absent: none.
  memory?: MemoryHome | string;
}

// The `process` runner without systemd: a detached child in its own session (and, where the
// helper can make one, its own cgroup), output appended to the app's log file. When the main
// process ends, whatever it started is killed at once, as systemd's KillMode=mixed does for a
// unit, so an app never leaves processes behind (docs/design.md §5: exactly one live instance).
export function createProcessRunner(opts: ProcessRunnerOptions): AppRunner {
  const home = opts.cgroups ?? null;
  const memory = opts.memory ?? 'no memory cgroups were looked for';
  // Set once a spawn could not enter its cgroup: the token is the proof from then on.
  let cgroupsOff = home === null;
  // The stop in flight per app: an exit it causes leaves the rest to it (and to its timeout).
  const stopping = new Map<string, Promise<unknown>>();

  const stopAll = async (target: AppTarget, timeoutMs: number): Promise<void> => {
    const cgroupDir = home ? appCgroupDir(home, target.app) : null;
    const find = () => findAppMembers(target, { cgroupDir, scanEnviron: cgroupsOff });
    const n = await stopMembers(find, `app ${target.app}`, { clock: opts.clock, timeoutMs });
    if (n > 0) debug('stopped app=%s processes=%d', target.app, n);
    if (home && cgroupDir) removeAppCgroup(home, cgroupDir);
    removeAppMemory(memory, target.app);
  };
  const stop = async (target: AppTarget, timeoutMs: number): Promise<void> => {
    const p = stopAll(target, timeoutMs);
    stopping.set(target.app, p);
    try {
      await p;
    } finally {
      if (stopping.get(target.app) === p) stopping.delete(target.app);
    }
  };
  // The latest start per app, and the end of a process's leftovers in flight per app.
  const latest = new Map<string, object>();
  // The main processes this runner started that have not ended yet, per app.
  const running = new Map<string, Set<number>>();
  const ending = new Map<string, Promise<void>>();
  // After the main process ended: what it left is killed at once, unless a stop is at work, or
  // unless the app was started again since (its exit heard late, by a busy helper): a start
  // comes only once nothing of the process before runs (AppRunner.start), and the app's cgroup
  // and instance token now hold the new process, which is no leftover.
  const endRest = async (target: AppTarget, startedBy: object): Promise<void> => {
    const pid = target.process?.pid;
    const others = running.get(target.app);
    if (pid !== undefined) others?.delete(pid);
    // Another process of the app runs beside this one (a handover: docs/design.md §17), or was
    // started after it: only what this one started, its session, is left over. The app's cgroup
    // and token hold that other process too.
    if (latest.get(target.app) !== startedBy || (others !== undefined && others.size > 0)) return stopSession(target, 0);
    const inFlight = stopping.get(target.app);
    if (inFlight) {
      await inFlight.catch(() => undefined);
      return;
    }
    const p = stopAll(target, 0);
    ending.set(target.app, p);
    try {
      await p;
    } finally {
      if (ending.get(target.app) === p) ending.delete(target.app);
    }
  };
  // One process and its session (a process the app started with setsid() of its own is left to
  // the app's next full stop): the old side of a handover.
  const stopSession = async (target: AppTarget, timeoutMs: number): Promise<void> => {
    const leader = target.process;
    if (!leader) return;
    const cgroupDir = home ? appCgroupDir(home, target.app) : null;
    const find = () => findAppMembers(target, { cgroupDir, scanEnviron: cgroupsOff }).filter((m) => m.pid === leader.pid || readProcStatSync(m.pid)?.sid === leader.pid);
    const n = await stopMembers(find, `app ${target.app} pid ${leader.pid}`, { clock: opts.clock, timeoutMs });
    if (n > 0) debug('stopped app=%s pid=%d and its session: processes=%d', target.app, leader.pid, n);
  };
  const start = async (spec: StartSpec): Promise<StartedProcess> => {
    // A start waits for the kill of the leftovers of the process before: it must not meet the new one.
    const inFlight = ending.get(spec.app);
    if (inFlight) await inFlight.catch(() => undefined);
    const startedBy = {};
    latest.set(spec.app, startedBy);
    const proc = await startProcess(spec, opts, memory, spawnIn, (target) => endRest(target, startedBy));
    let set = running.get(spec.app);
    if (!set) running.set(spec.app, (set = new Set()));
    const pid = proc.identity.pid;
    set.add(pid);
    // An exit heard before this line ran (a process that ended at once) left nothing to remove.
    void proc.exited.then(() => set.delete(pid));
    return proc;
  };
  // Spawns in the app's cgroup where there is one; a cgroup that cannot be entered turns
  // cgroups off for good (said once), and the token proves the app's processes from then on.
  // `limited`: the cgroup holds the app's memory limit (v2), so a spawn outside it is refused.
  const spawnIn = (app: string, fn: () => ChildProcess, limited = false): ChildProcess => {
    if (!home || cgroupsOff) {
      if (limited) throw new StewardError('CONFIG_INVALID', `cannot start app ${app}: its cgroup, which holds its memoryMax, cannot be entered here`);
      return fn();
    }
    let own: string;
    try {
      own = enterCgroup(home, appCgroupDir(home, app));
    } catch (err) {
      cgroupsOff = true;
      debug('cannot start app=%s in its cgroup (%s): apps are told apart by their instance token from now on', app, (err as Error).message);
      if (limited) throw new StewardError('CONFIG_INVALID', `cannot start app ${app}: its cgroup, which holds its memoryMax, cannot be entered: ${(err as Error).message}`, { cause: err });
      return fn();
    }
    try {
      return fn();
    } finally {
      leaveCgroup(own);
    }
  };

  return {
    start,
    stop: (target, o) => stop(target, o?.timeoutMs ?? 10_000),
    stopOne: (target, o) => stopSession(target, o?.timeoutMs ?? 10_000),
    isAlive: (identity) => isProcessAlive(identity),
  };
}

// Whether the recorded process still runs: same pid, start time and boot, and not a zombie.
async function isProcessAlive(identity: ProcIdentity): Promise<boolean> {
  if (!(await isSameProcessAlive(identity))) return false;
  const st = await readProcStat(identity.pid);
  return st !== null && st.state !== 'Z' && st.state !== 'X';
}

type SpawnIn = (app: string, fn: () => ChildProcess, limited?: boolean) => ChildProcess;
type EndRest = (target: AppTarget) => Promise<void>;

async function startProcess(spec: StartSpec, opts: ProcessRunnerOptions, memoryHome: MemoryHome | string, spawnIn: SpawnIn, endRest: EndRest): Promise<StartedProcess> {
  const what = `${spec.app} ${spec.version}`;
  if (spec.runAs && !opts.isRoot && spec.runAs.uid !== process.getuid?.()) {
    throw new StewardError('CONFIG_INVALID', `cannot start ${what}: it runs as ${spec.runAs.name} but the helper is not root`);
  }
  // The preparations are synchronous local metadata calls (stat, mkdir, open, fchown), a few
  // microseconds each. Every start waits on them, a respawn's included: as async calls each was
  // a round trip through libuv's thread pool, 0.1-0.5 ms apiece and far more on a loaded host,
  // which made up most of the time from an exit to its replacement (issue 8 row 4).
  checkCwd(spec.cwd, what);
  const logFd = openLog(spec.logFile, what);
  try {
    prepareStateDirSync(spec, opts.isRoot, what);
    const memory = prepareAppMemory(memoryHome, spec.app, spec.memoryMax, what);
    return await spawnApp(spec, logFd, opts.clock, what, memory, spawnIn, endRest);
  } finally {
    // The child holds its own copies of the fd; the helper keeps none (docs/design.md §5).
    closeSync(logFd);
  }
}

function checkCwd(cwd: string, what: string): void {
  let dir = false;
  try {
    dir = statSync(cwd).isDirectory();
  } catch {
    // gone or unreadable: refused below
  }
  if (!dir) throw new StewardError('RELEASE_INVALID', `cannot start ${what}: the folder ${cwd} does not exist`);
}

// Opens the log for append. O_NOFOLLOW: a symlink planted at the log path must not redirect
// root's writes; O_NONBLOCK: a FIFO there must not hang the helper (it is refused below).
function openLog(file: string, what: string): number {
  try {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o750 });
    const flags = C.O_WRONLY | C.O_APPEND | C.O_CREAT | C.O_NOFOLLOW | C.O_NONBLOCK;
    const fd = openSync(file, flags, 0o640);
    const st = fstatSync(fd);
    if (!st.isFile() || st.nlink !== 1) {
      closeSync(fd);
      throw new Error('not a regular file with a single link');
    }
    return fd;
  } catch (err) {
    throw toStewardError(err, 'IO_ERROR', `cannot start ${what}: log file ${file}`);
  }
}

async function spawnApp(
  spec: StartSpec,
  logFd: number,
  clock: Clock,
  what: string,
  memory: AppMemory | null,
  spawnIn: SpawnIn,
  endRest: EndRest,
): Promise<StartedProcess> {
  const [cmdFile, ...cmdArgs] = spec.command;
  if (cmdFile === undefined) throw new StewardError('RELEASE_INVALID', `cannot start ${what}: the command is empty`);
  // With sockets, LISTEN_PID must be the app's own pid, which only the process itself knows
  // before its exec: a /bin/sh step sets it to its pid ($$) and execs the command in place (the
  // app keeps that pid). The command and its arguments stay arguments, never part of the script.
  const [file, ...args] = spec.listen ? [SH, '-c', LISTEN_PID_SCRIPT, 'steward-listen', cmdFile, ...cmdArgs] : [cmdFile, ...cmdArgs];
  if (spec.listen) checkCommandFile(cmdFile, spec.cwd, what);
  const ids = spec.runAs && process.getuid?.() === 0 ? { uid: spec.runAs.uid, gid: spec.runAs.gid } : {};
  let child: ChildProcess;
  // The readiness and watchdog FIFOs as fds 3 and 4 (child-fds.ts); closed here once the child has its copies.
  const fds = openChildFds(spec.fds, what);
  try {
    const spawnChild = () =>
      spawn(file, args, {
        cwd: spec.cwd,
        env: buildAppEnv(spec),
        detached: true, // setsid(): its own session and process group
        stdio: ['ignore', logFd, logFd, ...(spec.listen?.fds ?? []), ...fds.list],
        shell: false,
        ...ids,
      });
    child = spawnIn(spec.app, () => (memory ? memory.spawnInside(spawnChild) : spawnChild()), memory?.kind === 'v2' && spec.memoryMax !== undefined);
  } catch (err) {
    if (err instanceof StewardError) throw err;
    throw spawnError(err, file, what);
  } finally {
    fds.close();
  }
  // Read at once, before the event loop can reap a child that exits immediately.
  const statText = child.pid === undefined ? null : readStatSync(child.pid);
  let identity: ProcIdentity | null = null;
  const exited = new Promise<ExitInfo>((resolve) =>
    child.once('exit', (code, signal) => {
      // Read first, before the end of the leftovers removes the app's cgroup.
      const exit: ExitInfo = { code, signal, ...(memory?.killedByOom(signal) ? { reason: 'OOM' as const } : {}) };
      const pid = child.pid as number;
      const leader = identity ?? { pid, startTicks: (statText === null ? null : parseStartTicks(statText)) ?? -1, bootId: readBootIdSync() };
      const target: AppTarget = { app: spec.app, process: leader, instance: spec.instance, uid: spec.runAs?.uid ?? (process.getuid?.() ?? -1) };
      endRest(target).then(
        () => resolve(exit),
        (err) => {
          debug('after the exit of app=%s pid=%d, what it left could not all be killed: %s', spec.app, pid, (err as Error).message);
          resolve(exit);
        },
      );
    }),
  );
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  }).catch((err) => {
    throw spawnError(err, file, what);
  });
  child.on('error', (err) => debug('child error app=%s err=%s', spec.app, err.message));
  // The helper may exit while the app runs on; 'exit' is still heard while the helper lives.
  child.unref();
  const pid = child.pid as number;
  identity = await identityOf(pid, statText);
  debug('started app=%s version=%s pid=%d', spec.app, spec.version, pid);
  return { identity, startedAt: clock.now(), exited };
}

const SH = '/bin/sh';
const LISTEN_PID_SCRIPT = 'LISTEN_PID=$$; export LISTEN_PID; exec "$@"';

// The wrapper's exec would fail inside the child (status 127 in the log); a command given as a
// path is checked here instead, so a missing one is refused at once as without the wrapper.
function checkCommandFile(file: string, cwd: string, what: string): void {
  if (!file.includes('/')) return;
  try {
    statSync(path.resolve(cwd, file));
  } catch {
    throw new StewardError('RELEASE_INVALID', `cannot start ${what}: ${file} not found`);
  }
}

function spawnError(err: unknown, file: string, what: string): StewardError {
  const e = err as NodeJS.ErrnoException;
  const why =
    e.code === 'ENOENT' ? `${file} not found` : e.code === 'EACCES' ? `${file}: permission denied` : `${file}: ${e.code ?? e.message}`;
  return new StewardError('RELEASE_INVALID', `cannot start ${what}: ${why}`, { cause: err });
}

function readStatSync(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
}

async function identityOf(pid: number, statText: string | null): Promise<ProcIdentity> {
  const ticks = statText === null ? null : parseStartTicks(statText);
  if (ticks !== null) return { pid, startTicks: ticks, bootId: await readBootId() };
  for (let i = 0; i < 20; i++) {
    const id = await readProcIdentity(pid);
    if (id) return id;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new StewardError('INTERNAL', `process ${pid} has no /proc entry right after it started`);
}
