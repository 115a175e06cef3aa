// A release fetch that fails is tried again within its attempt (docs/design.md §18): each source
// in turn (artifact-sources.ts), then after a backoff with jitter, round after round, until a
// deadline: the desired entry's window end (`notAfter`) or the run's fetch deadline
// (`fetchUntil`, within its verdict timeout), whichever is first. Only FETCH_FAILED is tried
// again: a release problem found in the bytes (integrity, archive) is the release's, and
// anything else is not the network's. The last error, with every try counted, is the attempt's.
import { StewardError } from '../../core/errors.js';
import type { Clock } from '../../platform/clock.js';

// The first wait after a round in which every source failed, doubled each round up to the cap,
// then moved down by up to half at random (so a batch of nodes does not come back in step).
export const FETCH_RETRY_BASE_MS = 2_000;
export const FETCH_RETRY_MAX_MS = 60_000;

// The wait after round `round` (0: the first) failed: min(cap, base × 2^round), less up to half of it.
export function fetchBackoffMs(round: number, random: () => number): number {
  const full = Math.min(FETCH_RETRY_MAX_MS, FETCH_RETRY_BASE_MS * 2 ** Math.min(round, 30));
  return Math.round(full * (1 - 0.5 * Math.min(1, Math.max(0, random()))));
}

// What the caller is told before each wait: for progress ("fetch-retrying") and the log.
export interface FetchRetryNotice {
  tries: number;
  waitMs: number;
  nextAt: number;
  error: StewardError;
}

export interface FetchRetryOptions {
  sources: readonly string[];
  // No wait starts that would end at or after it; a deadline already passed makes one round.
  until: number;
  clock: Pick<Clock, 'now' | 'sleep'>;
  random: () => number;
  // What the error says is being fetched ("web 1.2.0").
  what: string;
  onRetry?: (n: FetchRetryNotice) => void;
  signal?: AbortSignal;
}

// Calls `fetchFrom` on each source in turn until one succeeds, round after round with a backoff
// between rounds, until `until`. Throws the first error that is not FETCH_FAILED at once, and
// once time is up a FETCH_FAILED saying how many tries failed, where, and the last reason.
export async function fetchWithRetries<T>(o: FetchRetryOptions, fetchFrom: (url: string) => Promise<T>): Promise<T> {
  if (o.sources.length === 0) throw new StewardError('FETCH_FAILED', `${o.what}: no URL to fetch the release from`);
  const started = o.clock.now();
  let tries = 0;
  let last: StewardError | null = null;
  for (let round = 0; ; round++) {
    for (const url of o.sources) {
      tries++;
      try {
        return await fetchFrom(url);
      } catch (err) {
        if (!(err instanceof StewardError) || err.code !== 'FETCH_FAILED') throw err;
        last = err;
      }
    }
    const error = last as StewardError;
    const waitMs = fetchBackoffMs(round, o.random);
    const now = o.clock.now();
    if (now + waitMs >= o.until || o.signal?.aborted) {
      if (tries === 1) throw error;
      const where = o.sources.length === 1 ? '1 URL' : `${o.sources.length} URLs`;
      throw new StewardError('FETCH_FAILED', `${o.what}: ${tries} tries from ${where} over ${Math.round((now - started) / 1000)} s failed, and no time is left to try again before ${new Date(o.until).toISOString()}; the last: ${error.message}`, { cause: error, details: { ...error.details, tries } });
    }
    o.onRetry?.({ tries, waitMs, nextAt: now + waitMs, error });
    try {
      await o.clock.sleep(waitMs, o.signal);
    } catch {
      throw new StewardError('FETCH_FAILED', `${o.what}: the helper stopped while waiting to try the fetch again (after ${tries} tries); the last: ${error.message}`, { cause: error, details: { ...error.details, tries } });
    }
  }
}
