// Rollouts advance on a ticker, not inside heartbeats (docs/design.md §13). Every instance ticks: on its
// timer, and when a commit anywhere stored verdicts (tx.wakeRollouts, delivered by the store:
// NOTIFY on PostgreSQL, in-process on SQLite). A tick advances each running run in a
// transaction of its own, and only when it takes the run's advance lock at once: a run another
// instance is advancing is skipped, that instance does it. Killing an instance at any moment
// loses nothing: its transaction rolls back whole, its lock goes with its connection, and the
// next tick of any instance does the step again.
//
// A tick plans each run whole (every node of it), so its cost grows with the fleet, and verdicts
// arrive all through a batch: woken by each commit, ticks would run back to back and take the
// instance from its heartbeats (a 100,000-node run did). So a wake or the timer waits, after a
// tick that took d ms, until PACE × d ms have passed since it ended (at most MAX_GAP_MS): ticks
// under MAX_GAP_MS / PACE take at most a quarter of an instance's time, longer ones d / (d + 10 s),
// and on a small fleet the wait is a few ms.
import type { Clock } from '../../platform/clock.js';
import { logger } from '../../platform/log.js';
import type { StopPoints } from '../server/test-stop-points.js';
import type { ControlStore } from '../store/store.js';
import { reconcileFleet } from '../targets/reconcile-fleet.js';
import { advanceRun } from './advance-runs.js';
import { judgeDueSteps, type JudgeStep } from './judge-steps.js';

const log = logger('control:rollouts');

// A tick is followed by at least PACE times its own duration without one, and never by more
// than MAX_GAP_MS (a halt on a very large fleet is seen within that, plus a tick).
export const PACE = 3;
export const MAX_GAP_MS = 10_000;

export interface RolloutTicker {
  // Advances every running run that no other instance is advancing; resolves when done. A call
  // while a tick runs asks for one more after it (a burst of wakes costs one more tick, not one each).
  tick(): Promise<void>;
  // Asks for a tick as a wake does: after the pause the last tick earned (see above).
  wake(): void;
  // Stops the timer and the wakes. Idempotent.
  close(): void;
}

export interface RolloutTickerOptions {
  store: ControlStore;
  clock: Pick<Clock, 'sleep' | 'monotonic'>;
  // How often the timer ticks; 0: no timer (tests call tick()).
  tickMs: number;
  // Test only (test-stop-points.ts).
  stopAt?: StopPoints;
  // The analysis's judgement (docs/design.md §19); tests and the bench pass their own.
  judge?: JudgeStep;
}

// Starts the ticker: its timer, and its wake on stored verdicts.
export function startRolloutTicker(opts: RolloutTickerOptions): RolloutTicker {
  const { store, stopAt } = opts;
  const advanceFree = async (runId: number) => {
    const { issued, due, run } = await store.write(async (tx) => {
      if (!(await tx.runs.tryLock(runId))) return { issued: 0, due: [], run: null };
      const advance = await advanceRun(tx, runId, stopAt);
      const n = advance?.issued.length ?? 0;
      if (n > 0) stopAt?.('issue-before-commit');
      const due = advance?.plan.analysisDue ?? [];
      return { issued: n, due, run: due.length > 0 ? await tx.runs.get(runId) : null };
    });
    if (issued > 0) stopAt?.('issue-after-commit');
    // Steps whose analysis window has passed: judged after the commit, then recorded (and the run
    // advanced on their verdict) in a transaction of their own (judge-steps.ts).
    if (run && due.length > 0) await judgeDueSteps(store, run, due, opts.judge);
  };
  const advanceAll = async () => {
    try {
      const runs = await store.read((tx) => tx.runs.activeAll());
      // Why one transaction per run: a run's advance holds only its own lock, and a failed one
      // does not hold back the others.
      for (const run of runs) {
        await advanceFree(run.id).catch((err: unknown) => log('advance of run=%d app=%s failed: %s', run.id, run.app, (err as Error)?.message ?? String(err)));
      }
      // Then the standing wishes (docs/design.md §18): expired pins lifted, pinned versions and
      // targets converged, each in a transaction of its own.
      await reconcileFleet(store);
    } catch (err) {
      log('rollout tick failed: %s', (err as Error)?.message ?? String(err));
    }
  };
  let ticking: Promise<void> | null = null;
  let again = false;
  // When the last tick ended and how long it took (monotonic ms).
  let lastEnd = -Infinity;
  let lastMs = 0;
  const abort = new AbortController();
  const pause = (ms: number) => (ms > 0 ? opts.clock.sleep(ms, abort.signal).catch(() => undefined) : Promise.resolve());
  const gapLeft = () => lastEnd + Math.min(MAX_GAP_MS, PACE * lastMs) - opts.clock.monotonic();
  const tick = (): Promise<void> => {
    if (ticking) {
      again = true;
      return ticking;
    }
    ticking = (async () => {
      do {
        again = false;
        const t0 = opts.clock.monotonic();
        await advanceAll();
        lastEnd = opts.clock.monotonic();
        lastMs = lastEnd - t0;
        // Woken while it ran: one more tick, after its pause.
        if (again) await pause(gapLeft());
      } while (again && !abort.signal.aborted);
      ticking = null;
    })();
    return ticking;
  };
  // A wake while a tick runs, or while another wake waits out the pause, adds nothing. Resolves
  // when the tick it asked for (or joined) has run.
  let waiting: Promise<void> | null = null;
  const paced = (): Promise<void> => {
    if (abort.signal.aborted) return Promise.resolve();
    if (ticking) {
      again = true;
      return ticking;
    }
    if (waiting) return waiting;
    const left = gapLeft();
    if (left <= 0) return tick();
    waiting = pause(left).then(() => {
      waiting = null;
      return abort.signal.aborted ? undefined : tick();
    });
    return waiting;
  };
  const wake = (): void => void paced();
  const stopWakes = store.onRolloutWake(wake);
  if (opts.tickMs > 0) {
    void (async () => {
      while (!abort.signal.aborted) {
        try {
          await opts.clock.sleep(opts.tickMs, abort.signal);
        } catch {
          return;
        }
        await paced();
      }
    })();
  }
  return {
    tick,
    wake,
    close: () => {
      abort.abort();
      stopWakes();
    },
  };
}
