import type { ProcIdentity } from '../../platform/proc-identity.js';

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
}

export interface ExitInfo {
  code: number | null;
  signal: string | null;
}

export interface StartedProcess {
  identity: ProcIdentity;
  startedAt: number;
  // Resolves when the process exits, heard at once (the helper's own child).
  exited: Promise<ExitInfo>;
}

// Runs an app's process. Under this issue, a detached child in its own session
// (setsid: its own process group) with output to the app's log file.
export interface AppRunner {
  // Starts one process. The caller guarantees that no process of the app runs.
  start(spec: StartSpec): Promise<StartedProcess>;
  // Stops the app's process group: SIGTERM, then SIGKILL after `timeoutMs`, and waits until
  // no member is left. Idempotent: nothing running is success. Never signals a process
  // that is not provably ours (a reused pid is left alone).
  stop(identity: ProcIdentity, opts?: { timeoutMs?: number }): Promise<void>;
  // Whether the recorded process is alive and is still the same process.
  isAlive(identity: ProcIdentity): Promise<boolean>;
  // The app's last `lines` lines of output since `sinceMs` (wall clock), for a runner whose
  // output does not go to StartSpec.logFile (the systemd runner: journald). '' when there is
  // none. Absent: the output is in the log file.
  tailLog?(app: string, sinceMs: number, lines: number): Promise<string>;
}
