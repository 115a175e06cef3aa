// The agent's wake-ups (docs/design.md §18): between two heartbeats it holds a long poll,
// `GET /v1/wait` (docs/protocol.md), that the control plane answers as soon as this node's desired
// set changes; the heartbeat then goes at once and brings the new set. Pure in its decisions:
// the clock, the random source and the request go in.
//
// - A wait lasts until the next heartbeat is due, at most 60 s; one that runs out is armed again
//   while the interval lasts (an interval of 30 s: one wait per heartbeat).
// - An answered wait ends the sleep. A node woken again and again waits a little longer each time
//   before it holds the next wait (0, 0.5, 1, 2 s... at most the interval); a wait that runs out
//   starts that count again.
// - A wait that fails (no control plane answers, a 4xx or 5xx) is not tried again before the next
//   heartbeat: the interval is slept as without wake-ups.
// - 404: a control plane that does not know the route (docs/design.md §16). The agent keeps its plain
//   heartbeats and asks again after an hour (an upgraded control plane).
import type { Clock } from '../platform/clock.js';
import { WAIT_PATH } from '../core/control-paths.js';
import { backoffDelayMs, type BackoffSettings } from './backoff.js';
import type { PostAnswer } from './control-plane-client.js';
import type { Logf } from './convergence.js';

export const MAX_WAIT_S = 60;
// A wait shorter than this is not worth its request: the rest is slept.
export const MIN_WAIT_MS = 2_000;
// How long a control plane that answered 404 is not asked for a wait.
export const NO_ROUTE_RETRY_MS = 60 * 60_000;
// What the request adds to the wait's own length before it gives up on an answer.
export const WAIT_SLACK_MS = 10_000;
// The pause before the next wait of a node woken again and again (the first wake has none).
export const WAKE_BACKOFF: BackoffSettings = { baseMs: 500, capMs: 60_000, jitter: 0.1 };

// How a sleep between heartbeats ended: woken (heartbeat now), or the whole time passed.
export type SleepEnd = 'woken' | 'slept';

export interface WakeDeps {
  clock: Pick<Clock, 'monotonic' | 'sleep' | 'now'>;
  random: () => number;
  // One round of a GET through the control-plane client (control-plane-client.ts's get).
  get(request: () => { endpoint: string; headers: Record<string, string>; timeoutMs: number }, signal?: AbortSignal): Promise<PostAnswer>;
  // The node's wait credential (platform/wait-auth.ts), made afresh for each request.
  authorization(): string;
  log: Logf;
}

// The sleep between two heartbeats that a wake-up ends early.
export interface WakeSleep {
  // Sleeps `ms`, or less when the control plane wakes the node; rejects when `signal` aborts.
  sleep(ms: number, signal: AbortSignal): Promise<SleepEnd>;
}

// The wait of one request: its seconds, or null when the time left is too short for one.
export function waitSeconds(leftMs: number): number | null {
  if (leftMs < MIN_WAIT_MS) return null;
  return Math.min(MAX_WAIT_S, Math.floor(leftMs / 1000));
}

export function createWakeSleep(d: WakeDeps): WakeSleep {
  // Monotonic ms before which no wait is asked for (after a 404).
  let noRouteUntil = -Infinity;
  // Wakes in a row without a wait that ran out.
  let wakes = 0;
  const sleepRest = async (deadline: number, signal: AbortSignal): Promise<SleepEnd> => {
    const left = deadline - d.clock.monotonic();
    if (left > 0) await d.clock.sleep(left, signal);
    return 'slept';
  };
  return {
    async sleep(ms, signal) {
      const deadline = d.clock.monotonic() + ms;
      if (wakes > 1) await d.clock.sleep(Math.min(ms, backoffDelayMs(wakes - 1, d.random, WAKE_BACKOFF)), signal);
      for (;;) {
        if (d.clock.monotonic() < noRouteUntil) return sleepRest(deadline, signal);
        const first = waitSeconds(deadline - d.clock.monotonic());
        if (first === null) return sleepRest(deadline, signal);
        let answer: PostAnswer;
        try {
          answer = await d.get(() => {
            // Made per URL tried: a URL that failed took some of the time.
            const s = waitSeconds(deadline - d.clock.monotonic()) ?? 1;
            return { endpoint: `${WAIT_PATH}?timeout=${s}`, headers: { Authorization: d.authorization() }, timeoutMs: s * 1000 + WAIT_SLACK_MS };
          }, signal);
        } catch (err) {
          if (signal.aborted) throw err;
          d.log('wake-up wait failed: %s; the next heartbeat as usual', (err as Error).message);
          return sleepRest(deadline, signal);
        }
        const woken = answer.status === 200 ? (answer.json as { woken?: unknown } | undefined)?.woken : undefined;
        if (woken === true) {
          wakes++;
          d.log('woken by the control plane: this node\'s desired set changed; heartbeat now');
          return 'woken';
        }
        if (woken === false) {
          wakes = 0;
          continue;
        }
        if (answer.status === 404) {
          noRouteUntil = d.clock.monotonic() + NO_ROUTE_RETRY_MS;
          d.log('the control plane has no %s (an older release): plain heartbeats, asked again in %d min', WAIT_PATH, NO_ROUTE_RETRY_MS / 60_000);
          return sleepRest(deadline, signal);
        }
        const error = (answer.json as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
        d.log('wake-up wait refused status=%d code=%s message=%j; the next heartbeat as usual', answer.status, String(error?.code ?? '-'), String(error?.message ?? '').slice(0, 300));
        return sleepRest(deadline, signal);
      }
    },
  };
}
