// Time is injected (STYLE): wall time for payloads, a monotonic clock for waits.
export interface Clock {
  // Epoch milliseconds, for timestamps in files and payloads.
  now(): number;
  // Milliseconds from an arbitrary origin that never goes back, for waits and deadlines.
  monotonic(): number;
  // Resolves after `ms`, or rejects with the signal's reason when it aborts.
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

// The real clock.
export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const t = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(t);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};
