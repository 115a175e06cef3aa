// The helper's timer for holds with an expiry (docs/design.md §18): at a hold's `until` the helper
// lifts it by itself and records the lift, and the control plane's desired entries apply again.
// One loop for all apps: it lifts what is due, then sleeps until the next expiry, at most
// RECHECK_MS, so that a wall clock set forward or back is noticed within that long (the sleep
// is monotonic, expiries are wall times). A hold, a release or a start calls poke().
import type { Clock } from '../../platform/clock.js';
import { logger } from '../../platform/log.js';
import type { LiftResult } from '../ops/hold.js';

const log = logger('helper:hold');

// The longest sleep between two looks at the holds.
export const RECHECK_MS = 60_000;
// The wait before trying again an app whose lock was busy (an update running).
export const BUSY_RETRY_MS = 1000;

export interface HoldExpiryDeps {
  clock: Clock;
  // The apps of the host config.
  apps: () => readonly string[];
  // Lifts the app's hold if it expired by `now` (ops/hold.ts liftExpiredHold). Idempotent.
  lift: (app: string, now: number) => Promise<LiftResult>;
}

// Lifts every hold that expired by now; resolves with how long to wait before the next look.
export async function liftDueHolds(deps: HoldExpiryDeps): Promise<number> {
  const now = deps.clock.now();
  let wait = RECHECK_MS;
  for (const app of deps.apps()) {
    const r = await deps.lift(app, now).catch((err: Error) => {
      // A state file that does not read: the app's hold (if any) stands; said at each look.
      log('WARNING: app=%s its hold expiry is not checked: %s', app, err.message);
      return { next: null };
    });
    if ('busy' in r) wait = Math.min(wait, BUSY_RETRY_MS);
    else if ('next' in r && r.next !== null) wait = Math.min(wait, Math.max(0, r.next - now));
  }
  return wait;
}

// The loop. start() runs it until close(); poke() makes it look again now.
export class HoldExpiry {
  private readonly stopped = new AbortController();
  private wake = new AbortController();
  private loop: Promise<void> | null = null;

  constructor(private readonly deps: HoldExpiryDeps) {}

  // Starts the loop (once); its first look is at once.
  start(): void {
    this.loop ??= this.run();
  }

  // Looks again now (a hold was put or released). Nothing when the loop is not running.
  poke(): void {
    this.wake.abort();
  }

  // Stops the loop and resolves once it has.
  async close(): Promise<void> {
    this.stopped.abort();
    this.wake.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (!this.stopped.signal.aborted) {
      this.wake = new AbortController();
      const wait = await liftDueHolds(this.deps);
      if (this.stopped.signal.aborted) return;
      await this.deps.clock.sleep(wait, AbortSignal.any([this.wake.signal, this.stopped.signal])).catch(() => {});
    }
  }
}
