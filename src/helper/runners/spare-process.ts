// A spare process per app (the process runner with cgroups; issue 32 row 4): the app's next
// process, spawned ahead in the app's cgroup with the environment, fds, user and folder of its
// start, and parked in `/bin/sh` before the exec of the app's command. A respawn then writes one
// line to its stdin and it execs the app at once, where a spawn would first move the helper into
// the app's cgroup: a write that waits for a kernel RCU grace period (7.5-21 ms on the machines
// measured, app-cgroup.ts), on every respawn. The spare pays that move off the respawn's path:
// the first one is spawned in the same stay in the cgroup as the app itself (one move for both),
// each next one right after the spare before it was used.
//
// What stays true: the spare is born inside the app's cgroup, so it and everything the app will
// start are the app's by the cgroup's proof, and a stop of the app ends it with the rest. It
// runs nothing of the app's until its go: `read` waits on a pipe only the helper holds, and when
// the helper goes (a stop, a crash) the pipe's end makes it exit, never exec. A spare is used
// only for a start identical to the one it was made for (spareKey); any other start, an update
// or a stop discards it.
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { APP_PATH } from '../../platform/systemd.js';
import type { StartSpec } from './runner.js';

// One line on stdin, then the app's folder, the readiness and watchdog FIFOs opened at their fd numbers (as the
// systemd runner's wrapper opens them, app-fds.ts: a parked spare holds none, so the end of a
// FIFO that only the running process holds is still heard as such), stdin back on /dev/null, and
// the app's command in place of the shell (its pid, session and cgroup). The end of stdin without
// a line: exit, nothing run. The FIFO paths, the command and its arguments are the shell's
// arguments, never part of the script.
// A spare waits in `/`, and goes into the app's folder with its go: a process whose folder is a
// release's is the app's running process to anyone who looks (and the release's folder is not
// held by an idle shell).
export function spareArgs(cwd: string, fifos: Array<{ fd: number; path: string }>, file: string, args: string[]): string[] {
  const opens = fifos.map((f, i) => `${f.fd}<>"$${i + 2}"`).join(' ');
  const script = `read -r _ || exit 0; cd -- "$1" && exec ${opens} </dev/null || exit 126; shift ${fifos.length + 1}; exec "$@"`;
  return ['-c', script, 'steward-spare', cwd, ...fifos.map((f) => f.path), file, ...args];
}
export const SPARE_CWD = '/';

// How long a spare waits after the app's process ended for a start to use it; then it is ended
// (an app the supervisor gave up on, or one whose backoff is that long, keeps no idle process).
export const SPARE_IDLE_MS = 30_000;

// What a start is made of, for a spare to be used only by a start identical to its own: the
// version and folder, the command, the environment's inputs, the user, the log, the memory
// limit, the instance token and the FIFOs (by inode too: a FIFO made again since is another one).
export function spareKey(spec: StartSpec): string {
  const fifos = [spec.fds?.ready, spec.fds?.watchdog].map((p) => (p ? inode(p) : null));
  return JSON.stringify([spec.app, spec.version, spec.cwd, spec.command, spec.env, spec.runAs, spec.logFile, spec.stateDir, spec.memoryMax ?? null, spec.instance, spec.fds ?? null, fifos]);
}

function inode(p: string): number | null {
  try {
    return statSync(p).ino;
  } catch {
    return null;
  }
}

// Whether the shell's exec would find the command (a path from the app's folder, or a name on
// the app's PATH): a spare for one it would not find would only exit 127 at its go, where a
// spawn refuses the start at once (RELEASE_INVALID). Then the start makes no spare.
export function spareCommandExists(spec: StartSpec): boolean {
  const file = spec.command[0];
  if (file === undefined) return false;
  if (file.includes('/')) return existsSync(path.resolve(spec.cwd, file));
  const dirs = (spec.env.PATH ?? APP_PATH).split(':');
  return dirs.some((d) => d !== '' && existsSync(path.join(path.resolve(spec.cwd, d), file)));
}
