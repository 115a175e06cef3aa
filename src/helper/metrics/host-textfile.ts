// The helper's `metrics.textfile` (docs/design.md §12): the facts of `agentctl status` (read from the
// state files when something changed, never on a timer) and the counters this helper keeps since
// it started, rendered by render-textfile.ts and kept by textfile-keeper.ts. main.ts calls in
// after every change: an op that ends (update, rollback, hold, stop ...), a supervisor state
// change, a receipt signed.
import type { HelperCore } from '../handlers.js';
import { readStatus } from '../ops/status.js';
import { renderTextfile } from './render-textfile.js';
import { keepTextfile } from './textfile-keeper.js';

export interface HostTextfile {
  // Something the file shows may have changed.
  changed(): void;
  // The supervisor respawned `app` (counted), or changed its state (respawned false).
  supervised(app: string, respawned: boolean): void;
  // A receipt of `outcome` was signed (counted).
  receiptSigned(outcome: string): void;
  // Resolves once the file is written as of the last change.
  idle(): Promise<void>;
}

// Keeps `file` for the helper of `core`. Writes nothing until the first change.
export function keepHostTextfile(core: HelperCore, file: string): HostTextfile {
  const restarts = new Map<string, number>();
  const receipts: Record<string, number> = {};
  // A watch window closes with time, not with a change: the file is written again when the first
  // open one ends (unref'd: it never keeps the helper up).
  let closeTimer: NodeJS.Timeout | null = null;
  const rewriteAt = (until: number | null) => {
    if (closeTimer) clearTimeout(closeTimer);
    closeTimer = null;
    if (until === null) return;
    closeTimer = setTimeout(() => keeper.changed(), Math.max(0, until - core.clock.now()) + 50);
    closeTimer.unref();
  };
  const render = async (writeErrors: number) => {
    // No `units`: the file never waits on systemctl (systemd's own metrics cover unit apps).
    const status = await readStatus({
      paths: core.paths,
      config: core.config,
      startedAt: core.startedAt,
      recovering: core.recovering(),
      running: () => undefined,
      blockedInMemory: core.blockedInMemory,
      now: core.clock.now(),
      ...(core.self ? { ownVersion: core.self.ownVersion } : {}),
    });
    const ends = status.apps.flatMap((a) => (a.watch ? [a.watch.until] : []));
    rewriteAt(ends.length ? Math.min(...ends) : null);
    return renderTextfile({
      apps: status.apps.map((a) => ({
        name: a.name,
        runner: a.runner,
        // The app steward: the version the helper runs (no `current` before a self-update).
        current: a.self && a.self.version !== 'unknown' ? a.self.version : a.current,
        supervisorState: a.supervisor?.state ?? null,
        held: a.hold !== null,
        blocked: a.blocked !== null,
        lastUpdate: a.lastAttempt ? { outcome: a.lastAttempt.outcome, updatedAt: a.lastAttempt.updatedAt } : null,
        restarts: restarts.get(a.name) ?? 0,
        lastExit: a.supervisor?.lastExit ?? null,
        restartsSinceActivation: a.supervisor?.restartsSinceActivation ?? 0,
        watch: a.watch ? { version: a.watch.version, until: a.watch.until, restarts: a.watch.restarts, maxRestarts: a.watch.maxRestarts } : null,
      })),
      receipts,
      writeErrors,
    });
  };
  const keeper = keepTextfile(file, render);
  return {
    changed: keeper.changed,
    supervised(app, respawned) {
      if (respawned) restarts.set(app, (restarts.get(app) ?? 0) + 1);
      keeper.changed();
    },
    receiptSigned(outcome) {
      receipts[outcome] = (receipts[outcome] ?? 0) + 1;
      keeper.changed();
    },
    idle: keeper.idle,
  };
}
