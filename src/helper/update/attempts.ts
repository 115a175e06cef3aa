import { StewardError } from '../../core/errors.js';
import type { Progress } from '../../protocol/progress.js';

interface Live<R> {
  app: string;
  done: Promise<R>;
  accepted: Promise<void>;
  listeners: Set<(p: Progress) => void>;
}

// Attempts running in this helper, by attemptId: a request naming a running attempt
// attaches to its progress and result instead of starting a second one. An attempt
// never depends on the connection that started it: a client that goes away cancels nothing.
export class Attempts<R> {
  private readonly live = new Map<string, Live<R>>();

  // The running attempt, if any.
  get(attemptId: string): Live<R> | undefined {
    return this.live.get(attemptId);
  }

  // Starts `body` as attempt `attemptId`. `body` gets a progress function and an `accept`
  // to call once the attempt is durable (journal written), for --no-wait.
  start(attemptId: string, app: string, body: (progress: (p: Progress) => void, accept: () => void) => Promise<R>): Live<R> {
    if (this.live.has(attemptId)) throw new StewardError('BUSY', `attempt ${attemptId} is already running`, { details: { attemptId } });
    let accept!: () => void;
    const accepted = new Promise<void>((resolve) => (accept = resolve));
    const listeners = new Set<(p: Progress) => void>();
    const progress = (p: Progress) => {
      for (const l of listeners) {
        try {
          l(p);
        } catch {
          // A listener whose client went away must not disturb the attempt.
        }
      }
    };
    const done = body(progress, accept).finally(() => this.live.delete(attemptId));
    // Nobody may be waiting (the client went away): never let the rejection go unhandled.
    done.catch(() => {});
    const entry = { app, done, accepted, listeners };
    this.live.set(attemptId, entry);
    return entry;
  }

  // Waits for a running attempt, relaying its progress to `onProgress` meanwhile.
  async follow(entry: Live<R>, onProgress: (p: Progress) => void): Promise<R> {
    entry.listeners.add(onProgress);
    try {
      return await entry.done;
    } finally {
      entry.listeners.delete(onProgress);
    }
  }

  // Whether any attempt of `app` is running.
  runningFor(app: string): string | undefined {
    for (const [id, e] of this.live) if (e.app === app) return id;
    return undefined;
  }
}
