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
  readProcIdentity,
  type ProcIdentity,
} from '../../platform/proc-identity.js';
import { buildAppEnv } from './app-env.js';
import { readProcStat, stopProcessGroup } from './process-group.js';
import { prepareStateDirSync } from './state-dir.js';
import type { AppRunner, ExitInfo, StartSpec, StartedProcess } from './runner.js';

const debug = logger('helper:runner');

export interface ProcessRunnerOptions {
  clock: Clock;
  isRoot: boolean;
}

// The `process` runner without systemd: a detached child in its own session, output
// appended to the app's log file, stopped by signalling its whole process group.
export function createProcessRunner(opts: ProcessRunnerOptions): AppRunner {
  return {
    start: (spec) => startProcess(spec, opts),
    stop: (identity, o) => stopProcessGroup(identity, { clock: opts.clock, timeoutMs: o?.timeoutMs ?? 10_000 }),
    isAlive: (identity) => isProcessAlive(identity),
  };
}

// Whether the recorded process still runs: same pid, start time and boot, and not a zombie.
async function isProcessAlive(identity: ProcIdentity): Promise<boolean> {
  if (!(await isSameProcessAlive(identity))) return false;
  const st = await readProcStat(identity.pid);
  return st !== null && st.state !== 'Z' && st.state !== 'X';
}

async function startProcess(spec: StartSpec, opts: ProcessRunnerOptions): Promise<StartedProcess> {
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
    return await spawnApp(spec, logFd, opts.clock, what);
  } finally {
    // The child holds its own copies of the fd; the helper keeps none (DESIGN §5).
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

async function spawnApp(spec: StartSpec, logFd: number, clock: Clock, what: string): Promise<StartedProcess> {
  const [file, ...args] = spec.command;
  if (file === undefined) throw new StewardError('RELEASE_INVALID', `cannot start ${what}: the command is empty`);
  const ids = spec.runAs && process.getuid?.() === 0 ? { uid: spec.runAs.uid, gid: spec.runAs.gid } : {};
  let child: ChildProcess;
  try {
    child = spawn(file, args, {
      cwd: spec.cwd,
      env: buildAppEnv(spec),
      detached: true, // setsid(): its own session and process group, stopped as a group
      stdio: ['ignore', logFd, logFd],
      shell: false,
      ...ids,
    });
  } catch (err) {
    throw spawnError(err, file, what);
  }
  const exited = new Promise<ExitInfo>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  // Read at once, before the event loop can reap a child that exits immediately.
  const statText = child.pid === undefined ? null : readStatSync(child.pid);
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
  const identity = await identityOf(pid, statText);
  debug('started app=%s version=%s pid=%d', spec.app, spec.version, pid);
  return { identity, startedAt: clock.now(), exited };
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
