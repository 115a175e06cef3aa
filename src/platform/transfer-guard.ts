import type { ClientRequest, IncomingMessage } from 'node:http';
import type { FetchSettings } from '../core/config-schema.js';
import type { StewardError } from '../core/errors.js';
import { fetchFailed } from './fetch-failed.js';
import { logger } from './log.js';

const log = logger('platform:fetch');

// Enforces the total deadline, the minimum average speed over each full window, and
// the caller's signal, by destroying the current request with the reason.
export class TransferGuard {
  error: StewardError | undefined;
  private req: ClientRequest | undefined;
  private res: IncomingMessage | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly onAbort: () => void;

  constructor(
    settings: FetchSettings,
    private readonly where: string,
    private readonly bytes: () => number,
    private readonly signal?: AbortSignal,
  ) {
    const start = performance.now();
    this.timers.push(
      setTimeout(() => {
        this.fail(fetchFailed(`the deadline of ${settings.deadlineMs} ms passed fetching ${where} (${bytes()} bytes received)`));
      }, settings.deadlineMs),
    );
    if (settings.minBytesPerSecond > 0) {
      const windowMs = settings.minSpeedWindowMs;
      const samples = [{ t: start, bytes: 0 }];
      const tick = () => {
        const now = performance.now();
        samples.push({ t: now, bytes: bytes() });
        let i = -1;
        while (i + 1 < samples.length && (samples[i + 1] as { t: number }).t <= now - windowMs) i++;
        if (i < 0) return;
        samples.splice(0, i);
        const from = samples[0] as { t: number; bytes: number };
        const rate = ((bytes() - from.bytes) * 1000) / (now - from.t);
        if (rate < settings.minBytesPerSecond) {
          this.fail(
            fetchFailed(
              `the download from ${where} is too slow: ${Math.floor(rate)} bytes/s over ${Math.round(now - from.t)} ms, below ${settings.minBytesPerSecond} bytes/s`,
            ),
          );
        }
      };
      this.timers.push(setInterval(tick, Math.max(10, Math.floor(windowMs / 5))));
    }
    this.onAbort = () => this.fail(fetchFailed(`fetch of ${where} aborted`, signal?.reason));
    signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  // The request now in flight (each redirect's hop replaces the last); destroyed at once if the guard failed already.
  attachRequest(req: ClientRequest): void {
    this.req = req;
    this.res = undefined;
    if (this.error) req.destroy(this.error);
  }

  // The answer of the request in flight; destroyed at once if the guard failed already.
  attachResponse(res: IncomingMessage): void {
    this.res = res;
    if (this.error) res.destroy(this.error);
  }

  // Stops the transfer with `err`; only the first failure counts.
  fail(err: StewardError): void {
    if (this.error) return;
    this.error = err;
    log('fetch stopped url=%s reason=%s', this.where, err.message);
    this.res?.destroy(err);
    this.req?.destroy(err);
  }

  // Cancels the timers and the signal's listener and ends the request; call it once, when the transfer is over.
  dispose(): void {
    for (const t of this.timers) clearTimeout(t);
    this.signal?.removeEventListener('abort', this.onAbort);
    this.res?.destroy();
    this.req?.destroy();
  }
}
