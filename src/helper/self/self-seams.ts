import { StewardError } from '../../core/errors.js';
import { APP_PATH } from '../../platform/systemd.js';
import { runTool } from '../../platform/exec.js';
import { logger } from '../../platform/log.js';
import { isVersion } from '../../core/version.js';
import { packageVersionOf, type TrialState } from './trial-state.js';

const log = logger('helper:self');

// What a helper needs to hand over to a new steward version and to finish a trial (docs/design.md §14),
// built by the composition root (build-core.ts).
export interface SelfSeams {
  // The version this helper runs (its package.json's).
  ownVersion: string;
  // How the launcher started this helper, or null when no launcher did (no trial can run).
  launched: TrialState['launched'];
  // The installed package's version, the floor the launcher always boots (its
  // STEWARD_PACKAGE_VERSION, or the version it ran as the package), or null when unknown (no
  // launcher, or one from before it told).
  packageVersion: string | null;
  // Asks systemd to restart the helper's unit without waiting for the job (the restart stops
  // this very process). Resolves once asked; rejects when the ask failed.
  restart(unit: string): Promise<void>;
  // Tells systemd the helper is ready (Type=notify). Nothing to do outside a notify unit.
  notifyReady(): Promise<void>;
  // Once ready, under a unit with WatchdogSec (WATCHDOG_USEC set, and WATCHDOG_PID, when set,
  // this process): sends WATCHDOG=1 from this event loop at half the interval, so that systemd
  // restarts a helper whose loop is stuck. Nothing to do otherwise. Returns the stop of it.
  startWatchdog(): () => void;
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
    packageVersion: packageVersionOf(env, launched),
    stopping: stopping.signal,
    stop: () => stopping.abort(),
    restart: async (unit) => {
      const [file, ...args] = command ?? ['systemctl', '--no-block', 'restart'];
      const r = await runTool(file as string, [...args, unit], { env: { PATH: APP_PATH, LANG: 'C.UTF-8' }, timeoutMs: 30_000 });
      if (r.failure !== null) throw new StewardError('SYSTEM_COMMAND_FAILED', `${file} ${[...args, unit].join(' ')} failed (${r.failure}): ${r.stderr.trim()}`);
    },
    notifyReady: async () => {
      if (env.NOTIFY_SOCKET) await notify(env.NOTIFY_SOCKET, '--ready');
    },
    startWatchdog: () => {
      const socket = env.NOTIFY_SOCKET;
      const usec = Number(env.WATCHDOG_USEC);
      const forUs = !env.WATCHDOG_PID || Number(env.WATCHDOG_PID) === process.pid;
      if (!socket || !Number.isSafeInteger(usec) || usec <= 0 || !forUs) return () => {};
      const everyMs = Math.max(1, Math.floor(usec / 2000));
      log('watchdog: WATCHDOG=1 every %d ms (WatchdogSec %d ms)', everyMs, usec / 1000);
      const ping = () => {
        notify(socket, 'WATCHDOG=1').catch((err: Error) => log('WARNING: watchdog ping not sent: %s', err.message));
      };
      ping();
      const timer = setInterval(ping, everyMs);
      return () => clearInterval(timer);
    },
  };
}

// One message to systemd through systemd-notify. --pid: the message is this helper's (the main
// process), not the short-lived systemd-notify's, which systemd may no longer find in the unit
// when it reads it.
async function notify(socket: string, what: '--ready' | 'WATCHDOG=1'): Promise<void> {
  const r = await runTool('systemd-notify', [`--pid=${process.pid}`, what], { env: { PATH: APP_PATH, LANG: 'C.UTF-8', NOTIFY_SOCKET: socket }, timeoutMs: 10_000 });
  if (r.failure !== null) throw new StewardError('SYSTEM_COMMAND_FAILED', `systemd-notify ${what} failed (${r.failure}): ${r.stderr.trim()}`);
}

function restartCommandOf(raw: string | undefined): string[] | null {
  if (!raw) return null;
  const argv = JSON.parse(raw) as unknown;
  if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a) => typeof a === 'string')) {
    throw new StewardError('CONFIG_INVALID', 'STEWARD_SELF_RESTART_COMMAND is not a JSON array of strings');
  }
  return argv as string[];
}
