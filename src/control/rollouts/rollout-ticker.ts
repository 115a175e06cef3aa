// Rollouts advance on a ticker, not inside heartbeats (DESIGN §13). Every instance ticks: on its
// timer, and when a commit anywhere stored verdicts (tx.wakeRollouts, delivered by the store:
// NOTIFY on PostgreSQL, in-process on SQLite). A tick advances each running run in a
// transaction of its own, and only when it takes the run's advance lock at once: a run another
// instance is advancing is skipped, that instance does it. Killing an instance at any moment
// loses nothing: its transaction rolls back whole, its lock goes with its connection, and the
// next tick of any instance does the step again.
import type { Clock } from '../../platform/clock.js';
import { logger } from '../../platform/log.js';
import type { StopPoints } from '../server/test-stop-points.js';
import type { ControlStore } from '../store/store.js';
import { advanceRun } from './advance-runs.js';

const log = logger('control:rollouts');

export interface RolloutTicker {
  // Advances every running run that no other instance is advancing; resolves when done. A call
  // while a tick runs asks for one more after it (a burst of wakes costs one more tick, not one each).
  tick(): Promise<void>;
  // Stops the timer and the wakes. Idempotent.
  close(): void;
}

export interface RolloutTickerOptions {
  store: ControlStore;
  clock: Pick<Clock, 'sleep'>;
  // How often the timer ticks; 0: no timer (tests call tick()).
  tickMs: number;
  // Test only (test-stop-points.ts).
  stopAt?: StopPoints;
}

// Starts the ticker: its timer, and its wake on stored verdicts.
export function startRolloutTicker(opts: RolloutTickerOptions): RolloutTicker {
  const { store, stopAt } = opts;
  const advanceFree = async (runId: number) => {
    const issued = await store.write(async (tx) => {
      if (!(await tx.runs.tryLock(runId))) return 0;
      const n = (await advanceRun(tx, runId, stopAt))?.issued.length ?? 0;
      if (n > 0) stopAt?.('issue-before-commit');
      return n;
    });
    if (issued > 0) stopAt?.('issue-after-commit');
  };
  const advanceAll = async () => {
    try {
      const runs = await store.read((tx) => tx.runs.activeAll());
      // Why one transaction per run: a run's advance holds only its own lock, and a failed one
      // does not hold back the others.
      for (const run of runs) {
        await advanceFree(run.id).catch((err: unknown) => log('advance of run=%d app=%s failed: %s', run.id, run.app, (err as Error)?.message ?? String(err)));
      }
    } catch (err) {
      log('rollout tick failed: %s', (err as Error)?.message ?? String(err));
    }
  };
  let ticking: Promise<void> | null = null;
  let again = false;
  const tick = (): Promise<void> => {
    if (ticking) {
      again = true;
      return ticking;
    }
    ticking = (async () => {
      do {
        again = false;
        await advanceAll();
      } while (again);
      ticking = null;
    })();
    return ticking;
  };
  const stopWakes = store.onRolloutWake(() => void tick());
  const abort = new AbortController();
  if (opts.tickMs > 0) {
    void (async () => {
      while (!abort.signal.aborted) {
        try {
          await opts.clock.sleep(opts.tickMs, abort.signal);
        } catch {
          return;
        }
        await tick();
      }
    })();
  }
  return {
    tick,
    close: () => {
      abort.abort();
      stopWakes();
    },
  };
}
