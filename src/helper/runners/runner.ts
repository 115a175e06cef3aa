import type { ExitReason } from '../../core/exit-reasons.js';
import type { ProcIdentity } from '../../platform/proc-identity.js';
import type { AppFdPaths } from './app-fds.js';
import type { SocketDecl } from '../../core/listen-address.js';

// The account an app runs as; null means the helper's own user (only when not root).
export interface RunAs {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

export interface StartSpec {
  app: string;
  version: string;
  // The resolved release tree (versions/<ver>), never a path through `current`.
  cwd: string;
  command: string[];
  // start.env of the release file, already validated.
  env: Record<string, string>;
  runAs: RunAs | null;
  // /var/log/steward/<app>.log: output is appended here (a file, never a pipe the helper holds).
  logFile: string;
  // /var/lib/steward-apps/<app>: created if missing, owned by the app user, 0750.
  stateDir: string;
  // apps.<app>.memoryMax in bytes: the memory limit of the app's cgroup or unit. Absent: none.
  memoryMax?: number;
  // The app's instance token (run record `instance`), already durable in its record: it goes into
  // the app's environment as STEWARD_INSTANCE, where it is the proof that a process is the app's.
  instance: string;
  // The FIFOs handed to the app as its readiness and watchdog fds (app-fds.ts), when its release
  // asks for them: fd 3, then 4, named in STEWARD_READY_FD and STEWARD_WATCHDOG_FD.
  fds?: AppFdPaths;
  // apps.<app>.sockets: the app's processes are started by its socket keeper, which holds them
  // (sockets/keeper-client.ts). Absent: none.
  sockets?: SocketDecl[];
  // Inside the socket keeper only: the bound sockets, passed as fds 3 and up (LISTEN_FDS), with
  // their names (LISTEN_FDNAMES); the readiness and watchdog fds come after them.
  listen?: { fds: number[]; names: string[] };
}

// What a runner may stop of one app: its recorded main process and every process that proves to
// be the app's (docs/design.md §5: a process with no such proof is never signalled).
export interface AppTarget {
  app: string;
  // The recorded main process, when the record names one.
  process: ProcIdentity | null;
  // The app's instance token from its record, when it has one.
  instance: string | null;
  // The app's user: a process that runs as another user is never signalled.
  uid: number;
}

export interface ExitInfo {
  code: number | null;
  signal: string | null;
  // Why it ended, when the runner knows more than the code or signal (an OOM kill it read from the
  // app's cgroup or unit), or the supervisor does (a kill it asked for: Supervisor.noteKill).
  reason?: ExitReason;
}

export interface StartedProcess {
  identity: ProcIdentity;
  startedAt: number;
  // Resolves when the process exits, heard at once (the helper's own child).
  exited: Promise<ExitInfo>;
}

// Runs an app's processes: a detached child in its own session with output to the app's log file
// (process-runner.ts), or a transient systemd unit (systemd-runner.ts).
export interface AppRunner {
  // Starts one process. The caller guarantees that no process of the app runs. When that
  // process ends, everything it started ends with it, before `exited` resolves.
  start(spec: StartSpec): Promise<StartedProcess>;
  // Stops every process of the app it can prove is the app's: SIGTERM to all of them at once,
  // SIGKILL to whatever is left after `timeoutMs` (one deadline for all, not one per process), and
  // waits until none is left. Idempotent: nothing running is success. Never signals a process
  // without that proof or of another user than `target.uid` (a reused pid is left alone).
  stop(target: AppTarget, opts?: { timeoutMs?: number }): Promise<void>;
  // Stops one process of the app and what it started (its session), leaving any other process of
  // the app running: the old side of a handover (docs/design.md §17). The same proof rules as
  // `stop`; `target.process` names the process. Absent: the runner runs one process per app.
  stopOne?(target: AppTarget, opts?: { timeoutMs?: number }): Promise<void>;
  // Hears again of the exit of a process of the app this runner did not start in this helper (a
  // helper restarted, a handover's kept process): its exit as the process's real parent tells it,
  // or null when only polling can tell (then the supervisor polls it as adopted). Absent: null.
  reattach?(app: string, identity: ProcIdentity): Promise<StartedProcess | null>;
  // Closes the listening sockets held for the app (apps.<app>.sockets), once an operator stopped
  // it: connections are refused again rather than queued for a process that will not come.
  // Absent or no sockets: nothing.
  closeSockets?(app: string): Promise<void>;
  // Whether the recorded process is alive and is still the same process.
  isAlive(identity: ProcIdentity): Promise<boolean>;
  // The app's last `lines` lines of output since `sinceMs` (wall clock), for a runner whose
  // output does not go to StartSpec.logFile (the systemd runner: journald). '' when there is
  // none. Absent: the output is in the log file.
  tailLog?(app: string, sinceMs: number, lines: number): Promise<string>;
  // The helper stops, its apps run on: ends what the runner kept only to hear of exits (the
  // systemd runner's clients), which would stay behind in the helper's unit. Absent: nothing.
  release?(): void;
}
