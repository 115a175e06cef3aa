// Lstats a stage's objects on a thread of its own (stat-worker.ts), ahead of the main thread's
// loop that checks and links them one by one (helper/stage/stage-from-index.ts): the two run on
// two cores, and the loop takes each lstat from a shared buffer instead of making it. On
// node-red's 8,300 objects the lstats were 30-40 ms of a 230 ms stage. Every result is an lstat
// taken before the loop asks for it, so before the link that follows, as the check requires
// (docs/design.md §20.3); what it means is decided by the caller, as for its own lstat.
// Degrades to the main thread's own lstat, path by path, wherever the worker has not answered:
// a path it found missing (it may have been made since), a worker late by STALL_MS, or gone.
import fs from 'node:fs';
import { Worker } from 'node:worker_threads';
import { FIELDS, sharedFor, STAT_STOP, type StatJob } from './stat-layout.js';
import { logger } from './log.js';

const log = logger('platform:stat-ahead');

// What a check of an object reads of its lstat (object-store.ts, object-checks.ts).
export interface ObjectStat {
  ino: number;
  ctimeMs: number;
  mode: number;
  size: number;
  uid: number;
  gid: number;
  isFile(): boolean;
}

// Below this many paths the worker is not worth its message and its thread's wake-ups.
export const STAT_AHEAD_MIN = 256;
// How long the loop waits for a worker that does not move before it lstats by itself.
const STALL_MS = 100;
// How long an idle worker waits for the next stage (a rollout's next app, a retry) before it
// ends: short, so that an idle helper holds no second isolate (footprint, bench row 5).
const KEEP_WARM_MS = 5000;

let warm: { worker: Worker; timer: NodeJS.Timeout } | null = null;

function newWorker(): Worker {
  const worker = new Worker(new URL('./stat-worker.js', import.meta.url));
  worker.on('error', (err) => log('lstat worker failed: %s', err.message));
  worker.once('exit', () => {
    if (warm?.worker !== worker) return;
    clearTimeout(warm.timer);
    warm = null;
  });
  // Why unref: a worker must never keep the helper (or a test) alive.
  worker.unref();
  return worker;
}

function takeWorker(): Worker {
  if (warm) {
    const { worker, timer } = warm;
    warm = null;
    clearTimeout(timer);
    return worker;
  }
  return newWorker();
}

function keepWarm(worker: Worker): void {
  if (warm) {
    void worker.terminate();
    return;
  }
  const timer = setTimeout(() => {
    if (warm?.worker !== worker) return;
    warm = null;
    void worker.terminate();
  }, KEEP_WARM_MS);
  timer.unref();
  warm = { worker, timer };
}

// Starts a worker now, if none waits, so that its start-up (~20 ms of its own thread) overlaps
// what comes before the lstats (a stage's index fetch). Never throws: a worker that cannot
// start costs only the lstats the main thread then makes.
export function prepareStatWorker(): void {
  if (warm) return;
  try {
    keepWarm(newWorker());
  } catch (err) {
    log('no lstat worker: %s', (err as Error).message);
  }
}

function fromShared(out: Float64Array, at: number): ObjectStat {
  const file = out[at] === 1;
  return {
    ino: out[at + 1] as number,
    ctimeMs: out[at + 2] as number,
    mode: out[at + 3] as number,
    size: out[at + 4] as number,
    uid: out[at + 5] as number,
    gid: out[at + 6] as number,
    isFile: () => file,
  };
}

export class StatAhead {
  private lastSeen = 0;
  private lastMove = performance.now();
  private done = false;

  private constructor(
    private readonly paths: readonly string[],
    private readonly job: { worker: Worker; progress: Int32Array; out: Float64Array } | null,
  ) {}

  // Starts lstatting `paths` in order on the worker (on this thread, as asked, when they are few
  // or no worker starts).
  static start(paths: readonly string[]): StatAhead {
    if (paths.length < STAT_AHEAD_MIN) return new StatAhead(paths, null);
    try {
      const worker = takeWorker();
      const shared = sharedFor(paths.length);
      const job: StatJob = { paths: paths.join('\n'), shared };
      worker.once('message', () => keepWarm(worker));
      worker.postMessage(job);
      return new StatAhead(paths, { worker, progress: new Int32Array(shared, 0, 2), out: new Float64Array(shared, 8) });
    } catch (err) {
      log('lstats on the main thread: %s', (err as Error).message);
      return new StatAhead(paths, null);
    }
  }

  // The lstat of path `i` (undefined: missing), taken before this call returns.
  stat(i: number): ObjectStat | undefined {
    const job = this.job;
    if (job && !this.done) {
      let seen = Atomics.load(job.progress, 0);
      // A stall is counted from this call or the worker's last move, whichever is later: the
      // folders made before the first call are no time the worker kept the loop waiting.
      const asked = seen <= i ? performance.now() : 0;
      while (seen <= i) {
        const now = performance.now();
        if (seen !== this.lastSeen) {
          this.lastSeen = seen;
          this.lastMove = now;
        } else if (now - Math.max(this.lastMove, asked) > STALL_MS) {
          log('lstat worker stalled at %d of %d; the rest on the main thread', seen, this.paths.length);
          this.stop();
          break;
        }
        Atomics.wait(job.progress, 0, seen, 2);
        seen = Atomics.load(job.progress, 0);
      }
      if (seen > i && job.out[i * FIELDS] !== 0) return fromShared(job.out, i * FIELDS);
    }
    return fs.lstatSync(this.paths[i] as string, { throwIfNoEntry: false });
  }

  // Asks the worker to stop (it finishes the lstat it is in); later calls lstat here.
  stop(): void {
    if (this.done) return;
    this.done = true;
    if (this.job) Atomics.store(this.job.progress, 1, STAT_STOP);
  }
}
