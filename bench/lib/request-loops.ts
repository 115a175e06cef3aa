// Steady load for the handover bench (issue 32): N request loops, each sending one GET at a time
// on a fresh connection (`agent: false`, closed after the answer), the next as soon as the last
// one ended. A connection refused or reset, a timeout or a status other than 200 is a failed
// request; after one a loop waits RETRY_MS before its next (a client's retry, and what keeps a
// server that is down from being counted in the thousands). What a window of the run is judged
// by: the requests that failed in it, and the longest time in it with no answer at all.
import http from 'node:http';

const RETRY_MS = 10;
const TIMEOUT_MS = 5_000;

export interface WindowFigures {
  failed: number;
  // The longest stretch in the window between two answers (or the window's edges and an answer).
  longestGapMs: number;
  answered: number;
  // Failed requests by their error code (ECONNREFUSED, ECONNRESET, HTTP 502, ...).
  why: Record<string, number>;
}

export class RequestLoops {
  private readonly answers: number[] = [];
  private readonly failures: Array<{ at: number; why: string }> = [];
  private stopped = false;
  private readonly loops: Promise<void>[] = [];

  // `paceMs`: a pause after each answered request (0: none, the bench's steady load). The tests
  // pace their loops: the same concurrency and the same judgement of every request, for a
  // fraction of the CPU that an unpaced loop spends on a 2-core machine.
  constructor(
    private readonly url: string,
    private readonly n: number,
    private readonly paceMs = 0,
  ) {}

  start(): void {
    for (let i = 0; i < this.n; i++) this.loops.push(this.loop());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
  }

  // What happened between `from` and `to` (performance.now() times).
  figures(from: number, to: number): WindowFigures {
    const inside = this.answers.filter((t) => t >= from && t <= to).sort((a, b) => a - b);
    let gap = 0;
    let last = from;
    for (const t of inside) {
      gap = Math.max(gap, t - last);
      last = t;
    }
    gap = Math.max(gap, to - last);
    const failed = this.failures.filter((f) => f.at >= from && f.at <= to);
    const why: Record<string, number> = {};
    for (const f of failed) why[f.why] = (why[f.why] ?? 0) + 1;
    return { failed: failed.length, longestGapMs: gap, answered: inside.length, why };
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      const why = await this.once();
      if (why === null) {
        this.answers.push(performance.now());
        if (this.paceMs > 0) await new Promise((r) => setTimeout(r, this.paceMs));
      } else {
        this.failures.push({ at: performance.now(), why });
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
  }

  // null when answered 200 in full, else why not.
  private once(): Promise<string | null> {
    return new Promise((resolve) => {
      const req = http.get(this.url, { agent: false, timeout: TIMEOUT_MS }, (res) => {
        res.on('data', () => {});
        res.on('end', () => resolve(res.statusCode === 200 ? null : `HTTP ${res.statusCode}`));
        res.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'EIO'));
      });
      req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })));
      req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'EIO'));
    });
  }
}
