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
import { appFdNumbers } from './app-fds.js';
import { appCgroupDir, enterCgroup, leaveCgroup, removeAppCgroup, type CgroupHome } from './app-cgroup.js';
import { findAppMembers } from './app-members.js';
import { prepareAppMemory, removeAppMemory, type AppMemory, type MemoryHome } from './memory-cgroup.js';
import { readProcStat, readProcStatSync } from './process-group.js';
import { prepareStateDirSync } from './state-dir.js';
import { stopMembers } from './stop-members.js';
import { SPARE_CWD, SPARE_IDLE_MS, spareArgs, spareCommandExists, spareKey } from './spare-process.js';
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
  // How long a spare waits for a start after the app's process ended (SPARE_IDLE_MS; tests).
  spareIdleMs?: number;
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
  // The main processes ("pid:startTicks") this runner spawned inside their app's cgroup.
  const bornInside = new Set<string>();

  const stopAll = async (target: AppTarget, timeoutMs: number, except?: number): Promise<void> => {
    const cgroupDir = home ? appCgroupDir(home, target.app) : null;
    const p0 = target.process;
    const groupInCgroup = p0 !== null && bornInside.has(`${p0.pid}:${p0.startTicks}`);
    const found = () => findAppMembers(target, { cgroupDir, scanEnviron: cgroupsOff, groupInCgroup });
    const find = except === undefined ? found : () => found().filter((m) => m.pid !== except);
    const n = await stopMembers(find, `app ${target.app}`, { clock: opts.clock, timeoutMs });
    if (n > 0) debug('stopped app=%s processes=%d', target.app, n);
    if (home && cgroupDir) removeAppCgroup(home, cgroupDir);
    removeAppMemory(memory, target.app);
  };
  const stop = async (target: AppTarget, timeoutMs: number): Promise<void> => {
    // A stop ends the spare too (it is in the app's cgroup, found with the rest), and one being
    // parked is not kept.
    generation.set(target.app, {});
    dropSpare(target.app);
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
    // The app's spare is no leftover: the respawn about to come runs in it. One that no start
    // uses within SPARE_IDLE_MS (the supervisor gave up, or backs off that long) is ended, and the
    // app's cgroups go with it.
    const spare = spares.get(target.app);
    if (spare) retireIdleSpare(target, spare);
    const p = stopAll(target, 0, spare?.pid);
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
  // Spares (spare-process.ts): per app, the process parked for its next start, and which stop
  // or start last changed the app (a spare spawned for an older one is not kept).
  const spares = new Map<string, Spare>();
  const generation = new Map<string, object>();
  const dropSpare = (app: string) => {
    spares.get(app)?.discard();
    spares.delete(app);
  };
  // Only where the app has a cgroup: the move into it is what a spare saves (its first spawn
  // shares the app's move), and the cgroup is what proves the spare is the app's.
  const wantsSpare = (spec: StartSpec) => home !== null && !cgroupsOff && !spec.listen && spareCommandExists(spec);
  // The spare for `spec` if one is parked for exactly this start and still alive; any other goes.
  const takeSpare = async (spec: StartSpec): Promise<{ spare: Spare; identity: ProcIdentity } | null> => {
    const spare = spares.get(spec.app);
    if (!spare) return null;
    spares.delete(spec.app);
    const identity = spare.key === spareKey(spec) && spare.alive() ? await spare.ready : null;
    if (identity && spare.alive()) return { spare, identity };
    spare.discard();
    return null;
  };
  // Ends only the spare itself (this runner's own child), then removes the app's cgroups if they
  // are empty: whatever else is in them by then is not this runner's to end (a process a later
  // helper of the same host started there, as the crash tests' helpers run one after another).
  const retireIdleSpare = (target: AppTarget, spare: Spare) => {
    const gen = generation.get(target.app);
    setTimeout(() => {
      if (spares.get(target.app) !== spare || generation.get(target.app) !== gen) return;
      debug('app=%s: no start used its spare for %d ms; ending it', target.app, opts.spareIdleMs ?? SPARE_IDLE_MS);
      dropSpare(target.app);
      void spare.gone.then(() => {
        if (generation.get(target.app) !== gen) return;
        if (home) removeAppCgroup(home, appCgroupDir(home, target.app));
        removeAppMemory(memory, target.app);
      });
    }, opts.spareIdleMs ?? SPARE_IDLE_MS).unref();
  };
  // Parks a new spare once the app runs again, off the start's path: its spawn pays the move.
  const parkSpare = (spec: StartSpec, gen: object, endRestOf: EndRest) => {
    setImmediate(() => {
      if (generation.get(spec.app) !== gen || spares.has(spec.app) || stopping.has(spec.app)) return;
      startProcess(spec, opts, memory, spawnIn, endRestOf, 'spare').then(
        (r) => {
          if (!r.spare) return;
          if (generation.get(spec.app) !== gen || spares.has(spec.app)) r.spare.discard();
          else spares.set(spec.app, r.spare);
        },
        (err) => debug('no spare for app=%s: %s', spec.app, (err as Error).message),
      );
    });
  };
  const start = async (spec: StartSpec): Promise<StartedProcess> => {
    // A start waits for the kill of the leftovers of the process before: it must not meet the new one.
    const inFlight = ending.get(spec.app);
    if (inFlight) await inFlight.catch(() => undefined);
    const startedBy = {};
    latest.set(spec.app, startedBy);
    const gen = {};
    generation.set(spec.app, gen);
    const endRestOf = (target: AppTarget) => endRest(target, startedBy);
    const parked = await takeSpare(spec);
    let proc: StartedProcess;
    if (parked) {
      proc = startWithSpare(spec, opts, memory, parked.spare, parked.identity, endRestOf);
      parkSpare(spec, gen, endRestOf);
    } else {
      const r = await startProcess(spec, opts, memory, spawnIn, endRestOf, wantsSpare(spec) ? 'main+spare' : 'main');
      proc = r.proc as StartedProcess;
      if (r.spare) spares.set(spec.app, r.spare);
    }
    let set = running.get(spec.app);
    if (!set) running.set(spec.app, (set = new Set()));
    const pid = proc.identity.pid;
    set.add(pid);
    const born = `${pid}:${proc.identity.startTicks}`;
    if (home && !cgroupsOff) bornInside.add(born);
    // An exit heard before this line ran (a process that ended at once) left nothing to remove.
    // The leftovers are ended before `exited` resolves, so the record of its birth can go then.
    void proc.exited.then(() => {
      set.delete(pid);
      bornInside.delete(born);
    });
    return proc;
  };
  // Spawns in the app's cgroup where there is one; a cgroup that cannot be entered turns
  // cgroups off for good (said once), and the token proves the app's processes from then on.
  // `limited`: the cgroup holds the app's memory limit (v2), so a spawn outside it is refused.
  const spawnIn = <T>(app: string, fn: () => T, limited = false): T => {
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
    // The spares go with the helper (the end of their pipe would end them at its exit): a helper
    // stopped inside a process that runs on (the crash tests' starts) leaves none behind either.
    release: () => {
      for (const app of [...spares.keys()]) {
        generation.set(app, {});
        dropSpare(app);
      }
    },
  };
}

// Whether the recorded process still runs: same pid, start time and boot, and not a zombie.
async function isProcessAlive(identity: ProcIdentity): Promise<boolean> {
  if (!(await isSameProcessAlive(identity))) return false;
  const st = await readProcStat(identity.pid);
  return st !== null && st.state !== 'Z' && st.state !== 'X';
}

type SpawnIn = <T>(app: string, fn: () => T, limited?: boolean) => T;
type EndRest = (target: AppTarget) => Promise<void>;

async function startProcess(spec: StartSpec, opts: ProcessRunnerOptions, memoryHome: MemoryHome | string, spawnIn: SpawnIn, endRest: EndRest, plan: SpawnPlan = 'main'): Promise<Spawned> {
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
    return await spawnApp(spec, logFd, opts.clock, what, memory, spawnIn, endRest, plan);
  } finally {
    // The child holds its own copies of the fd; the helper keeps none (docs/design.md §5).
    closeSync(logFd);
  }
}

// Starts the app in its spare: the preparations a start makes that a spare cannot have made
// ahead (the state folder, the memory cgroup's OOM count as of now), then its go.
function startWithSpare(spec: StartSpec, opts: ProcessRunnerOptions, memoryHome: MemoryHome | string, spare: Spare, identity: ProcIdentity, endRest: EndRest): StartedProcess {
  const what = `${spec.app} ${spec.version}`;
  prepareStateDirSync(spec, opts.isRoot, what);
  const memory = prepareAppMemory(memoryHome, spec.app, spec.memoryMax, what);
  return spare.use(identity, memory, endRest);
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

// What a spawn makes: the app's process, a spare parked for its next start (spare-process.ts), or both.
type SpawnPlan = 'main' | 'main+spare' | 'spare';

interface Spawned {
  proc: StartedProcess | null;
  spare: Spare | null;
}

async function spawnApp(
  spec: StartSpec,
  logFd: number,
  clock: Clock,
  what: string,
  memory: AppMemory | null,
  spawnIn: SpawnIn,
  endRest: EndRest,
  plan: SpawnPlan = 'main',
): Promise<Spawned> {
  const [cmdFile, ...cmdArgs] = spec.command;
  if (cmdFile === undefined) throw new StewardError('RELEASE_INVALID', `cannot start ${what}: the command is empty`);
  // With sockets, LISTEN_PID must be the app's own pid, which only the process itself knows
  // before its exec: a /bin/sh step sets it to its pid ($$) and execs the command in place (the
  // app keeps that pid). The command and its arguments stay arguments, never part of the script.
  const [file, ...args] = spec.listen ? [SH, '-c', LISTEN_PID_SCRIPT, 'steward-listen', cmdFile, ...cmdArgs] : [cmdFile, ...cmdArgs];
  if (spec.listen) checkCommandFile(cmdFile, spec.cwd, what);
  const ids = spec.runAs && process.getuid?.() === 0 ? { uid: spec.runAs.uid, gid: spec.runAs.gid } : {};
  let child: ChildProcess | null = null;
  let spareChild: ChildProcess | null = null;
  // The readiness and watchdog FIFOs as fds 3 and 4 (child-fds.ts); closed here once the child has its copies.
  const fds = openChildFds(spec.fds, what);
  try {
    const spawnChild = (spare: boolean) =>
      spawn(spare ? SH : file, spare ? spareArgs(spec.cwd, appFdNumbers(spec.fds), cmdFile, cmdArgs) : args, {
        cwd: spare ? SPARE_CWD : spec.cwd,
        env: buildAppEnv(spec),
        detached: true, // setsid(): its own session and process group
        // A spare's stdin is the pipe its go comes through, and it opens its FIFOs itself after
        // the go (spare-process.ts); the app's stdin is /dev/null.
        stdio: spare ? ['pipe', logFd, logFd] : ['ignore', logFd, logFd, ...(spec.listen?.fds ?? []), ...fds.list],
        shell: false,
        ...ids,
      });
    // Both in one stay in the cgroup: the move costs a kernel grace period, paid once for the two.
    const both = () => {
      const main = plan === 'spare' ? null : spawnChild(false);
      let spare: ChildProcess | null = null;
      if (plan !== 'main') {
        try {
          spare = spawnChild(true);
        } catch (err) {
          if (main === null) throw err;
          debug('no spare for app=%s: %s', spec.app, (err as Error).message);
        }
      }
      return { main, spare };
    };
    ({ main: child, spare: spareChild } = spawnIn(spec.app, () => (memory ? memory.spawnInside(both) : both()), memory?.kind === 'v2' && spec.memoryMax !== undefined));
  } catch (err) {
    if (err instanceof StewardError) throw err;
    throw spawnError(err, file, what);
  } finally {
    fds.close();
  }
  const spare = spareChild ? armSpare(spareChild, spec, clock) : null;
  if (child === null) return { proc: null, spare };
  const proc = await watchMain(child, spec, clock, what, file, memory, endRest).catch((err) => {
    spare?.discard();
    throw err;
  });
  return { proc, spare };
}

// Hears the app's process: its exit (once what it left is ended: endRest) and its identity.
async function watchMain(child: ChildProcess, spec: StartSpec, clock: Clock, what: string, file: string, memory: AppMemory | null, endRest: EndRest): Promise<StartedProcess> {
  // Read at once, before the event loop can reap a child that exits immediately.
  const statText = child.pid === undefined ? null : readStatSync(child.pid);
  let identity: ProcIdentity | null = null;
  const exited = new Promise<ExitInfo>((resolve) =>
    child.once('exit', (code, signal) => {
      // Read first, before the end of the leftovers removes the app's cgroup.
      const exit: ExitInfo = { code, signal, ...(memory?.killedByOom(signal) ? { reason: 'OOM' as const } : {}) };
      const pid = child.pid as number;
      const leader = identity ?? { pid, startTicks: (statText === null ? null : parseStartTicks(statText)) ?? -1, bootId: readBootIdSync() };
      endAndTell(spec, leader, exit, endRest, resolve);
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

// After an exit of the app's process: what it left is ended, then the exit is told.
function endAndTell(spec: StartSpec, leader: ProcIdentity, exit: ExitInfo, endRest: EndRest, tell: (e: ExitInfo) => void): void {
  const target: AppTarget = { app: spec.app, process: leader, instance: spec.instance, uid: spec.runAs?.uid ?? (process.getuid?.() ?? -1) };
  endRest(target).then(
    () => tell(exit),
    (err) => {
      debug('after the exit of app=%s pid=%d, what it left could not all be killed: %s', spec.app, leader.pid, (err as Error).message);
      tell(exit);
    },
  );
}

// A spare: the app's next process, already spawned in its cgroup with its start's environment,
// fds and user, parked in `/bin/sh` before the exec of the app's command (spare-process.ts).
interface Spare {
  key: string;
  pid: number;
  // Its identity once spawned; null when it could not be.
  ready: Promise<ProcIdentity | null>;
  alive(): boolean;
  // Resolves once its process has ended (however it ended).
  gone: Promise<void>;
  // Lets it exec the app. `memory`: the app's memory cgroup as set up for this start (its OOM
  // count read now), `endRest` the start's own. Call once its `ready` gave an identity.
  use(identity: ProcIdentity, memory: AppMemory | null, endRest: EndRest): StartedProcess;
  discard(): void;
}

function armSpare(child: ChildProcess, spec: StartSpec, clock: Clock): Spare {
  const pid = child.pid ?? -1;
  const statText = pid > 0 ? readStatSync(pid) : null;
  let ended = false;
  let run: { identity: ProcIdentity; memory: AppMemory | null; endRest: EndRest; tell: (e: ExitInfo) => void } | null = null;
  let markGone: () => void = () => undefined;
  const gone = new Promise<void>((r) => (markGone = r));
  child.once('exit', (code, signal) => {
    ended = true;
    markGone();
    // A spare that never ran the app ends alone (killed with the app's stop, or its pipe closed
    // with the helper): it started nothing and nobody waits for it.
    if (!run) return;
    const exit: ExitInfo = { code, signal, ...(run.memory?.killedByOom(signal) ? { reason: 'OOM' as const } : {}) };
    endAndTell(spec, run.identity, exit, run.endRest, run.tell);
  });
  child.on('error', (err) => {
    ended = true;
    markGone();
    debug('spare of app=%s: %s', spec.app, err.message);
  });
  // EPIPE on a go to a spare that just died: its exit is heard the same.
  child.stdin?.on('error', () => undefined);
  child.unref();
  (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  const ready = new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  }).then(
    () => identityOf(pid, statText),
    () => null,
  );
  return {
    key: spareKey(spec),
    pid,
    gone,
    ready: ready.catch(() => null),
    alive: () => !ended && child.exitCode === null && child.signalCode === null,
    use(identity, memory, endRest) {
      const exited = new Promise<ExitInfo>((tell) => (run = { identity, memory, endRest, tell }));
      child.stdin?.end('\n');
      debug('started app=%s version=%s pid=%d (its spare)', spec.app, spec.version, pid);
      return { identity, startedAt: clock.now(), exited };
    },
    discard() {
      if (ended) return;
      try {
        // Our own child, not reaped yet: the pid is still this process.
        child.kill('SIGKILL');
      } catch {
        // gone
      }
    },
  };
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
