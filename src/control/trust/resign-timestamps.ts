// Every instance re-signs the fleet's timestamp (docs/design.md §21.2): on start and every minute it
// looks at the newest, and signs the next one when it is TIMESTAMP_RESIGN_MS (1 h) old. Two
// instances that do so at once take the same version: the database keeps the first insert
// (trust_metadata's key), the other is dropped quietly. Time is the store's clock; the pause
// between looks is the server's (injectable) clock.
import type { Clock } from '../../platform/clock.js';
import { logger } from '../../platform/log.js';
import type { ControlStore } from '../store/store.js';
import { resignIfDue } from './repository.js';

const log = logger('control:trust');

export const RESIGN_CHECK_MS = 60_000;

export interface TimestampResigner {
  // Looks once now: the version signed, or null.
  check(): Promise<number | null>;
  close(): void;
}

export function startTimestampResigner(opts: { store: ControlStore; clock: Pick<Clock, 'sleep'>; everyMs?: number }): TimestampResigner {
  const abort = new AbortController();
  const check = async (): Promise<number | null> => {
    const v = await opts.store.write((tx) => resignIfDue(tx));
    if (v !== null) {
      await opts.store.durable();
      log('signed timestamp version %d', v);
    }
    return v;
  };
  const every = opts.everyMs ?? RESIGN_CHECK_MS;
  void (async () => {
    while (!abort.signal.aborted) {
      try {
        await check();
      } catch (err) {
        // Another instance's write won (BUSY), or the database is away: the next look tries again.
        log('re-signing the timestamp failed: %s', (err as Error)?.message ?? String(err));
      }
      if (every <= 0) return;
      try {
        await opts.clock.sleep(every, abort.signal);
      } catch {
        return;
      }
    }
  })();
  return { check, close: () => abort.abort() };
}
