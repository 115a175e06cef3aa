import { StewardError } from '../core/errors.js';

export interface RunningWork {
  attemptId: string;
  op: string;
  phase: string;
  startedAt: number;
}

// One piece of work per app at a time inside the helper (DESIGN §4). A second request
// for a busy app gets BUSY naming the running attempt, its phase and start time.
export class AppLocks {
  private readonly running = new Map<string, RunningWork>();

  // Hears every release (the supervisor reconciles an app once an update ends).
  onRelease: ((app: string, work: RunningWork) => void) | undefined;

  // Takes the app's lock or throws BUSY. The returned work record's `phase` may be updated.
  acquire(app: string, work: RunningWork): { work: RunningWork; release: () => void } {
    const busy = this.running.get(app);
    if (busy) {
      throw new StewardError(
        'BUSY',
        `${app} is busy: ${busy.op} ${busy.attemptId} in phase ${busy.phase} since ${new Date(busy.startedAt).toISOString()}`,
        { details: { attemptId: busy.attemptId, phase: busy.phase, startedAt: busy.startedAt } },
      );
    }
    this.running.set(app, work);
    let released = false;
    return {
      work,
      release: () => {
        if (released) return;
        released = true;
        if (this.running.get(app) === work) this.running.delete(app);
        this.onRelease?.(app, work);
      },
    };
  }

  // The work running for `app`, if any.
  get(app: string): RunningWork | undefined {
    return this.running.get(app);
  }
}
