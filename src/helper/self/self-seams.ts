import { StewardError } from '../../core/errors.js';
import { APP_PATH } from '../../platform/systemd.js';
import { runTool } from '../../platform/exec.js';
import type { TrialState } from './trial-state.js';

// What a helper needs to hand over to a new steward version and to finish a trial (DESIGN §14),
// built by the composition root (build-core.ts).
export interface SelfSeams {
  // The version this helper runs (its package.json's).
  ownVersion: string;
  // How the launcher started this helper, or null when no launcher did (no trial can run).
  launched: TrialState['launched'];
  // Asks systemd to restart the helper's unit without waiting for the job (the restart stops
  // this very process). Resolves once asked; rejects when the ask failed.
  restart(unit: string): Promise<void>;
  // Tells systemd the helper is ready (Type=notify). Nothing to do outside a notify unit.
  notifyReady(): Promise<void>;
  // Aborted once the helper stops (main.ts): a handover waiting for its restart waits no more.
  stopping: AbortSignal;
  // Aborts `stopping`. Idempotent.
  stop(): void;
}

// The real seams. STEWARD_SELF_RESTART_COMMAND (a JSON argv, the unit appended) replaces
// `systemctl --no-block restart` for tests under a root prefix only, as STEWARD_FAULTS does:
// a production helper (root '') always asks systemd.
export function selfSeams(env: NodeJS.ProcessEnv, root: string, ownVersion: string, launched: TrialState['launched']): SelfSeams {
  const command = root ? restartCommandOf(env.STEWARD_SELF_RESTART_COMMAND) : null;
  const stopping = new AbortController();
  return {
    ownVersion,
    launched,
    stopping: stopping.signal,
    stop: () => stopping.abort(),
    restart: async (unit) => {
      const [file, ...args] = command ?? ['systemctl', '--no-block', 'restart'];
      const r = await runTool(file as string, [...args, unit], { env: { PATH: APP_PATH, LANG: 'C.UTF-8' }, timeoutMs: 30_000 });
      if (r.failure !== null) throw new StewardError('SYSTEM_COMMAND_FAILED', `${file} ${[...args, unit].join(' ')} failed (${r.failure}): ${r.stderr.trim()}`);
    },
    notifyReady: async () => {
      const socket = env.NOTIFY_SOCKET;
      if (!socket) return;
      // --pid: the message is this helper's (the main process), not the short-lived
      // systemd-notify's, which systemd may no longer find in the unit when it reads it.
      const r = await runTool('systemd-notify', ['--ready', `--pid=${process.pid}`], { env: { PATH: APP_PATH, LANG: 'C.UTF-8', NOTIFY_SOCKET: socket }, timeoutMs: 10_000 });
      if (r.failure !== null) throw new StewardError('SYSTEM_COMMAND_FAILED', `systemd-notify --ready failed (${r.failure}): ${r.stderr.trim()}`);
    },
  };
}

function restartCommandOf(raw: string | undefined): string[] | null {
  if (!raw) return null;
  const argv = JSON.parse(raw) as unknown;
  if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a) => typeof a === 'string')) {
    throw new StewardError('CONFIG_INVALID', 'STEWARD_SELF_RESTART_COMMAND is not a JSON array of strings');
  }
  return argv as string[];
}
