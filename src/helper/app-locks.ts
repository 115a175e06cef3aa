import { StewardError } from '../core/errors.js';
import type { RunningWork } from '../protocol/answers.js';

export interface HeldLock {
  work: RunningWork;
  release: () => void;
}

// Work that yields to requests: a request finding it waits for it to end (a supervisor
// pass lasts milliseconds, at most a stop timeout) instead of failing with BUSY.
const BACKGROUND_OPS = new Set(['supervise']);
// The op of a self-update's handover (helper/self/handover.ts), which holds every app's lock
// until the helper is restarted: the others get HANDOVER rather than BUSY.
export const HANDOVER_OP = 'handover';

// One piece of work per app at a time inside the helper (docs/design.md §4). A second request
// for an app busy with another request gets BUSY naming the running attempt, its phase and
// start time.
export class AppLocks {
  private readonly running = new Map<string, { work: RunningWork; released: Promise<void> }>();

  // Hears every release (the supervisor reconciles an app once an update ends).
  onRelease: ((app: string, work: RunningWork) => void) | undefined;

  // Takes the app's lock for a request: waits out background work, throws BUSY for another
  // request. The returned work record's `phase` may be updated.
  async acquire(app: string, work: RunningWork): Promise<HeldLock> {
    for (;;) {
      const busy = this.running.get(app);
      if (!busy || !BACKGROUND_OPS.has(busy.work.op)) return this.tryAcquire(app, work);
      await busy.released;
    }
  }

  // Takes the app's lock now or throws BUSY.
  tryAcquire(app: string, work: RunningWork): HeldLock {
    const busy = this.running.get(app)?.work;
    if (busy?.op === HANDOVER_OP) {
      throw new StewardError('HANDOVER', `${app} is locked by the handover ${busy.attemptId} to a new steward version since ${new Date(busy.startedAt).toISOString()}: the helper is about to restart`, {
        details: { attemptId: busy.attemptId, phase: busy.phase, startedAt: busy.startedAt },
      });
    }
    if (busy) {
      throw new StewardError(
        'BUSY',
        `${app} is busy: ${busy.op} ${busy.attemptId} in phase ${busy.phase} since ${new Date(busy.startedAt).toISOString()}`,
        { details: { attemptId: busy.attemptId, phase: busy.phase, startedAt: busy.startedAt } },
      );
    }
    let resolve!: () => void;
    const entry = { work, released: new Promise<void>((r) => (resolve = r)) };
    this.running.set(app, entry);
    let released = false;
    return {
      work,
      release: () => {
        if (released) return;
        released = true;
        if (this.running.get(app) === entry) this.running.delete(app);
        resolve();
        this.onRelease?.(app, work);
      },
    };
  }

  // The work running for `app`, if any.
  get(app: string): RunningWork | undefined {
    return this.running.get(app)?.work;
  }
}
