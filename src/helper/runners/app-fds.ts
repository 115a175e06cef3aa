// The file descriptors steward hands an app (docs/design.md §17, docs/app-contract.md): its
// readiness fd (STEWARD_READY_FD) and its watchdog fd (STEWARD_WATCHDOG_FD). Each is a FIFO of
// the app's, /run/steward-fds/<app>/<ready|watchdog>, made once and reused by every start of the
// app (making one costs a `mkfifo` process; a respawn does not wait for that), removed when the
// app stops. Both runners hand the app the same FIFO, opened read-write on fd 3 (then 4): the
// process runner opens it itself and passes the fd; under systemd, which cannot pass an fd
// through `systemd-run`, a `/bin/sh` wrapper in the unit opens it by its path, as the app's user,
// then execs the app. Read-write, so the app holds a reader of its own: its writes never fail
// with EPIPE while no helper reads (the helper restarts), and the pipe's 64 KiB hold them.
// The helper reads them only through fifo-reader.ts (never blocking).
import { chmodSync, closeSync, constants as C, existsSync, fstatSync, lchownSync, lstatSync, mkdirSync, openSync, rmSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import type { HostPaths } from '../../core/paths.js';
import { StewardError } from '../../core/errors.js';
import { isAppName } from '../../core/name-checks.js';
import { runTool } from '../../platform/exec.js';
import { APP_PATH } from '../../platform/systemd.js';

export const READY_FD_ENV = 'STEWARD_READY_FD';
export const WATCHDOG_FD_ENV = 'STEWARD_WATCHDOG_FD';
// start.watchdogMs, for the app's timer (as systemd's WATCHDOG_USEC).
export const WATCHDOG_MS_ENV = 'STEWARD_WATCHDOG_MS';

export type AppFdKind = 'ready' | 'watchdog';

// The FIFOs a start hands its app, by kind (StartSpec.fds).
export interface AppFdPaths {
  ready?: string;
  watchdog?: string;
  // start.watchdogMs, with `watchdog`.
  watchdogMs?: number;
}

// The first fd of the app's FIFOs: 3, or past the listening sockets of an app that has them
// (LISTEN_FDS takes 3 and up, as systemd passes them).
export function firstAppFd(sockets: number): number {
  return 3 + sockets;
}

// The app's folder of FIFOs. /run/steward-fds and it are root's, 0711: the app's user can open
// the FIFO it is given by its name, and cannot list, make, rename or replace anything there.
export function appFdFolder(paths: HostPaths, app: string): string {
  if (!isAppName(app)) throw new TypeError(`not an app name: ${JSON.stringify(app)}`);
  return path.join(paths.appFdsDir, app);
}

export function appFdPath(paths: HostPaths, app: string, kind: AppFdKind): string {
  return path.join(appFdFolder(paths, app), kind);
}

// The fd numbers of the app's FIFOs: the readiness fd first, at 3, then the watchdog's.
export function appFdNumbers(fds: AppFdPaths | undefined, first = 3): Array<{ kind: AppFdKind; path: string; fd: number }> {
  const out: Array<{ kind: AppFdKind; path: string; fd: number }> = [];
  if (fds?.ready) out.push({ kind: 'ready', path: fds.ready, fd: first + out.length });
  if (fds?.watchdog) out.push({ kind: 'watchdog', path: fds.watchdog, fd: first + out.length });
  return out;
}

// The variables that tell the app its fd numbers.
export function appFdEnv(fds: AppFdPaths | undefined, first = 3): Record<string, string> {
  const env: Record<string, string> = {};
  for (const f of appFdNumbers(fds, first)) env[f.kind === 'ready' ? READY_FD_ENV : WATCHDOG_FD_ENV] = String(f.fd);
  if (fds?.watchdog && fds.watchdogMs !== undefined) env[WATCHDOG_MS_ENV] = String(fds.watchdogMs);
  return env;
}

// Makes (or keeps) the FIFOs a start of the app wants, owned by `uid` (the app's user) with mode
// 0600, and removes those it does not want. A path that is anything but such a FIFO (a file, a
// FIFO of another user, a second link) is removed and made again.
export async function ensureAppFds(paths: HostPaths, app: string, start: { ready?: 'fd'; watchdogMs?: number }, uid: number | null): Promise<AppFdPaths> {
  const folder = appFdFolder(paths, app);
  const want = { ready: start.ready === 'fd', watchdog: start.watchdogMs !== undefined };
  if (!want.ready && !want.watchdog) {
    // One stat on a respawn of an app without them (the usual case).
    if (existsSync(folder)) removeAppFds(paths, app);
    return {};
  }
  makeRootFolder(paths.appFdsDir, true);
  makeRootFolder(folder);
  const out: AppFdPaths = {};
  for (const kind of ['ready', 'watchdog'] as const) {
    const p = path.join(folder, kind);
    if (!want[kind]) {
      unlinkQuiet(p);
      continue;
    }
    if (!isOwnFifo(p, uid)) {
      // Why unlink: whatever is there is not the FIFO this app may be handed.
      unlinkQuiet(p);
      await makeFifo(p);
      // The app's user opens it under systemd (the wrapper runs as that user).
      if (uid !== null && process.getuid?.() === 0) lchownSync(p, uid, -1);
      chmodSync(p, 0o600);
    }
    out[kind] = p;
  }
  if (want.watchdog) out.watchdogMs = start.watchdogMs;
  return out;
}

// Removes the app's FIFOs (the app stopped, or its version wants none). Idempotent.
export function removeAppFds(paths: HostPaths, app: string): void {
  // Why a recursive removal: the folder holds only the FIFOs this module made.
  rmSync(appFdFolder(paths, app), { recursive: true, force: true });
}

// Opens a FIFO for a child to inherit: read-write (never blocks, and the child holds a reader of
// its own), never through a symlink. The caller closes it once the child has its copy.
export function openFifoForChild(p: string): number {
  const fd = openSync(p, C.O_RDWR | C.O_NOFOLLOW);
  if (!fstatSync(fd).isFIFO()) {
    closeSync(fd);
    throw new StewardError('IO_ERROR', `${p} is not a FIFO`);
  }
  return fd;
}

// The command under systemd: `/bin/sh -c 'exec 3<>"$1" 4<>"$2" || exit 126; shift 2; exec "$@"'`
// then the app's own command. The FIFO paths are arguments, never part of the script. `first`:
// the first fd number (past the listening sockets: firstAppFd).
export function wrapWithFdOpener(command: string[], fds: AppFdPaths | undefined, first = 3): string[] {
  const list = appFdNumbers(fds, first);
  if (list.length === 0) return command;
  const opens = list.map((f, i) => `${f.fd}<>"$${i + 1}"`).join(' ');
  const script = `exec ${opens} || exit 126; shift ${list.length}; exec "$@"`;
  return ['/bin/sh', '-c', script, 'steward-fds', ...list.map((f) => f.path), ...command];
}

// Checks first and makes only what is missing: every start of the app passes here (a respawn's
// included), and a thrown EEXIST costs more than the stat.
function makeRootFolder(dir: string, withParent = false): void {
  let st = lstatSync(dir, { throwIfNoEntry: false });
  if (!st) {
    try {
      if (withParent) mkdirSync(path.dirname(dir), { recursive: true, mode: 0o755 });
      mkdirSync(dir, { mode: 0o711 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new StewardError('IO_ERROR', `cannot make ${dir}: ${(err as Error).message}`, { cause: err });
    }
    st = lstatSync(dir);
  }
  if (!st.isDirectory() || st.uid !== process.getuid?.()) throw new StewardError('ROOT_UNSAFE', `refusing ${dir}: not a folder of this helper's own`);
  // Why chmod: a folder someone else could write in would let them replace a FIFO.
  if ((st.mode & 0o777) !== 0o711) chmodSync(dir, 0o711);
}

function isOwnFifo(p: string, uid: number | null): boolean {
  const st = lstatSync(p, { throwIfNoEntry: false });
  const owner = uid !== null && process.getuid?.() === 0 ? uid : process.getuid?.();
  return !!st && st.isFIFO() && st.nlink === 1 && st.uid === owner && (st.mode & 0o777) === 0o600;
}

function unlinkQuiet(p: string): void {
  try {
    unlinkSync(p);
  } catch {
    // gone already
  }
}

// Node has no mkfifo(3): the coreutils tool makes it, once per app (later starts reuse it).
async function makeFifo(p: string): Promise<void> {
  const r = await runTool('mkfifo', ['-m', '600', '--', p], { env: { PATH: APP_PATH, LANG: 'C.UTF-8' }, timeoutMs: 10_000 });
  if (r.failure !== null) throw new StewardError('IO_ERROR', `cannot make the FIFO ${p}: ${r.stderr.trim() || r.failure}`);
}
