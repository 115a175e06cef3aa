// The wait of an activation for its app's readiness (docs/design.md §17, `start.ready: "fd"`): one
// newline on STEWARD_READY_FD, before the health check, within the health check's timeoutMs. The
// reader opens before the spawn (fifo-reader.ts), so a quick app's newline is not missed and an fd
// the app closes at once is an end heard at once.
import type { Clock } from '../../platform/clock.js';
import { logger } from '../../platform/log.js';
import { openFifoReader, type FifoReader } from '../supervisor/fifo-reader.js';

const log = logger('helper:ready');

export type ReadyResult = { ok: true } | { ok: false; code: 'APP_NOT_READY' | 'READY_FD_CLOSED'; reason: string };

export interface ReadyWait {
  // Resolves at the first newline, when the app closed the fd (or exited) without one, or after
  // `timeoutMs`. `exited`: the started process's exit, an end as well.
  wait(timeoutMs: number, exited: Promise<unknown>): Promise<ReadyResult>;
  // Stops listening (idempotent). The app keeps its fd: what it writes later goes nowhere.
  close(): void;
}

// Opens the readiness FIFO at `fifo` and listens from now on; bytes left by a process before are dropped.
export function openReadyWait(fifo: string, clock: Clock): ReadyWait {
  let state: 'waiting' | 'ready' | 'closed' = 'waiting';
  let wake: () => void = () => undefined;
  const reader: FifoReader = openFifoReader(
    fifo,
    {
      newline: () => {
        if (state === 'waiting') state = 'ready';
        wake();
      },
      closed: () => {
        if (state === 'waiting') state = 'closed';
        wake();
      },
    },
    { drain: true },
  );
  return {
    async wait(timeoutMs, exited) {
      const start = clock.monotonic();
      if (state === 'waiting') {
        const ac = new AbortController();
        await Promise.race([
          new Promise<void>((r) => (wake = r)),
          exited.then(() => undefined),
          clock.sleep(timeoutMs, ac.signal).catch(() => undefined),
        ]);
        ac.abort();
      }
      reader.close();
      const ms = Math.round(clock.monotonic() - start);
      if (state === 'ready') {
        log('ready after %d ms', ms);
        return { ok: true };
      }
      if (state === 'closed') return { ok: false, code: 'READY_FD_CLOSED', reason: `it closed STEWARD_READY_FD without writing the newline that says it is ready (after ${ms} ms)` };
      // The exit came first and the end of the fd not yet: the same story.
      if (clock.monotonic() - start < timeoutMs) return { ok: false, code: 'READY_FD_CLOSED', reason: `it exited before it wrote the newline on STEWARD_READY_FD that says it is ready (after ${ms} ms)` };
      return { ok: false, code: 'APP_NOT_READY', reason: `it wrote no newline on STEWARD_READY_FD within ${timeoutMs} ms (health.timeoutMs)` };
    },
    close: () => reader.close(),
  };
}
