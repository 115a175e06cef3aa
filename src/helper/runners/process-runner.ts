import { spawn, type ChildProcess } from 'node:child_process';
import { constants as C, promises as fsp, readFileSync } from 'node:fs';
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
import { prepareStateDir } from './state-dir.js';
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
  // Three independent preparations, issued together (a respawn waits on them); their errors are
  // reported in this order, and an opened log is closed whatever happens.
  const cwdP = checkCwd(spec.cwd, what);
  const logP = openLog(spec.logFile, what);
  const stateP = prepareStateDir(spec, opts.isRoot, what);
  const settled = await Promise.allSettled([cwdP, logP, stateP]);
  const log = settled[1].status === 'fulfilled' ? settled[1].value : null;
  try {
    for (const r of settled) if (r.status === 'rejected') throw r.reason;
    return await spawnApp(spec, (log as fsp.FileHandle).fd, opts.clock, what);
  } finally {
    // The child holds its own copies of the fd; the helper keeps none (DESIGN §5).
    await log?.close();
  }
}

async function checkCwd(cwd: string, what: string): Promise<void> {
  const st = await fsp.stat(cwd).catch(() => null);
  if (!st?.isDirectory()) throw new StewardError('RELEASE_INVALID', `cannot start ${what}: the folder ${cwd} does not exist`);
}

// Opens the log for append. O_NOFOLLOW: a symlink planted at the log path must not redirect
// root's writes; O_NONBLOCK: a FIFO there must not hang the helper (it is refused below).
async function openLog(file: string, what: string): Promise<fsp.FileHandle> {
  try {
    await fsp.mkdir(path.dirname(file), { recursive: true, mode: 0o750 });
    const flags = C.O_WRONLY | C.O_APPEND | C.O_CREAT | C.O_NOFOLLOW | C.O_NONBLOCK;
    const h = await fsp.open(file, flags, 0o640);
    const st = await h.stat();
    if (!st.isFile() || st.nlink !== 1) {
      await h.close();
      throw new Error('not a regular file with a single link');
    }
    return h;
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
