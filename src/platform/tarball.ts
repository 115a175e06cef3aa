import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import type { ExtractLimits } from '../core/config-schema.js';
import { StewardError, toStewardError } from '../core/errors.js';
import type { TreeEntry } from '../core/tree-listing.js';
import type { StreamAnswer, StreamMessage, WorkerJob, WorkerMessage } from './tarball-worker.js';

// Where the archive's bytes are: a file the worker opens and reads (and hashes again, see
// ExtractResult.integrity), or a Buffer of verified bytes that is transferred to the worker
// (detached here: the caller can no longer read or change them) and gunzipped from memory.
export type ArchiveSource = { archivePath: string; archive?: never } | { archive: Buffer; archivePath?: never };

export type ExtractOptions = ArchiveSource & {
  dest: string; // must not exist yet; its parent is a 0700 staging folder the caller made
  // Where the tree will be renamed to (versions/<ver>): entries whose path would not fit the
  // kernel's PATH_MAX there (or at dest) are refused up front.
  finalDir?: string;
  limits: ExtractLimits;
  onProgress?: (p: { entries: number; bytes: number }) => void;
  signal?: AbortSignal;
};

export interface ExtractResult {
  entries: number;
  bytes: number;
  treeDigest: string; // 'sha256-' + base64 (44 characters)
  // Every entry of the tree (tree-walk.ts), for the object store and the file index (§20).
  listing: TreeEntry[];
  // 'sha512-' + base64 of every archive byte the extraction read from archivePath; null for
  // an archive given in memory, which was never read back from anywhere, and for bytes streamed
  // to it (extractStream), whose caller hashed them.
  integrity: string | null;
}

// An extraction fed the archive's bytes as they arrive (docs/design.md §3 step 4: for an https fetch
// under a signed manifest, the extraction overlaps the fetch and its hash). `write` never
// throws: once the extraction failed it drops the bytes, so that the caller still hashes them
// all (a mismatch wins over the extractor's error). It waits while the extraction is more than
// STREAM_AHEAD bytes behind. `result` settles when the extraction is done or failed; `abort`
// ends it (and waits), and `result` then rejects.
export interface StreamedExtraction {
  write(chunk: Uint8Array): Promise<void>;
  end(): void;
  readonly result: Promise<ExtractResult>;
  abort(): Promise<void>;
}

// The bytes sent to the worker at a time (copied: a network chunk's memory may be shared, so it
// is never transferred itself), and how far the sender may run ahead of the extraction.
const STREAM_BATCH = 1 << 20;
const STREAM_AHEAD = 8 << 20;

// A started extraction worker waiting for its job: staging starts it as it begins to obtain
// the bytes, so the worker's start-up (~0.1 s: a thread, an isolate, node-tar) runs while the
// archive is copied and hashed. extract() gives it the job; cancel() ends it when no job will
// come (staging failed before extracting) and resolves once the thread is gone.
// An extraction fed its bytes as they arrive: no file nor Buffer, `what` names the bytes (the
// URL), `size` is their declared size (the gzip-bomb ratio's base).
export type StreamOptions = Omit<ExtractOptions, 'archivePath' | 'archive' | 'signal'> & { what: string; size: number };

export interface PreparedExtraction {
  extract(opts: ExtractOptions): Promise<ExtractResult>;
  // `what` names the bytes in errors (the URL); `size`, their declared size (the gzip-bomb
  // ratio's base).
  extractStream(opts: StreamOptions): StreamedExtraction;
  cancel(): Promise<void>;
}

// How long a worker that finished a job cleanly waits for the next one before it ends. A fresh
// worker pays its start-up and runs its first job cold (interpreted, before V8 has compiled
// the parse and write loops: ~0.3 s more on 4,000 files here); stages that follow one another
// (several apps converged in turn, a rollout's retries) take the warm one. Short, so that an
// idle helper holds no second isolate (footprint, row 5, is measured after 10 s of rest).
export const KEEP_WARM_MS = 5000;

// At most one idle worker, kept warm for KEEP_WARM_MS. Only a worker whose last job ended in
// 'done' comes back here: one that failed, was aborted or was cancelled is terminated, so no
// worker that met a hostile archive (or left a file open) is ever given another job.
// `onGone` drops it from the pool should it die while it waits.
let warm: { worker: Worker; timer: NodeJS.Timeout; onGone: () => void } | null = null;

function takeWarm(): Worker | null {
  if (warm === null) return null;
  const { worker, timer, onGone } = warm;
  warm = null;
  clearTimeout(timer);
  worker.off('error', onGone).off('exit', onGone);
  return worker;
}

// Takes a worker whose job ended in 'done' (the job's listeners removed) into the pool.
function keepWarm(worker: Worker): void {
  if (warm !== null) {
    void worker.terminate();
    return;
  }
  const onGone = (): void => {
    if (warm?.worker === worker) takeWarm();
  };
  worker.once('error', onGone).once('exit', onGone);
  // Why unref: an idle worker must not keep a process alive, nor outlive its wait.
  worker.unref();
  const timer = setTimeout(() => {
    if (warm?.worker !== worker) return;
    takeWarm();
    void worker.terminate();
  }, KEEP_WARM_MS);
  timer.unref();
  warm = { worker, timer, onGone };
}

export function prepareExtraction(): PreparedExtraction {
  const worker = takeWarm() ?? new Worker(new URL('./tarball-worker.js', import.meta.url));
  // What happened to the worker before its job came, if anything.
  let early: { err: unknown } | { code: number } | null = null;
  const onError = (err: unknown): void => void (early ??= { err });
  const onExit = (code: number): void => void (early ??= { code });
  worker.on('error', onError);
  worker.on('exit', onExit);
  // Why: a worker waiting for a job that may never come must not keep a process alive.
  worker.unref();
  let used = false;
  const take = (): void => {
    if (used) throw new StewardError('INTERNAL', 'a prepared extraction was used twice');
    used = true;
    worker.off('error', onError);
    worker.off('exit', onExit);
    worker.ref();
  };
  return {
    extract(opts) {
      try {
        take();
      } catch (err) {
        return Promise.reject(err);
      }
      return runJob(worker, opts, early);
    },
    extractStream(opts) {
      take();
      return streamJob(worker, opts, early);
    },
    async cancel() {
      if (used) return;
      used = true;
      await worker.terminate();
    },
  };
}

// Extracts a .tar.gz into `dest` inside a worker thread (the helper keeps answering while it
// stages), checking every entry before it is written and the whole tree after (docs/design.md §3.4).
// The tree comes back root-owned (when root) and read-only; `dest` itself stays 0700.
// Throws UNSAFE_ARCHIVE for a hostile or malformed archive, DISK_FULL, or IO_ERROR; on any
// failure `dest` may hold partial content and the caller removes the staging folder.
// An abort terminates the worker and rejects with the signal's reason.
export async function extractArchive(opts: ExtractOptions): Promise<ExtractResult> {
  opts.signal?.throwIfAborted();
  return prepareExtraction().extract(opts);
}

function streamJob(worker: Worker, opts: StreamOptions, early: { err: unknown } | { code: number } | null): StreamedExtraction {
  const { port1, port2 } = new MessageChannel();
  const aborter = new AbortController();
  const result = runJob(worker, { ...opts, archivePath: opts.what, signal: aborter.signal }, early, { port: port2, size: opts.size, what: opts.what });
  let over = false;
  // Why: the caller awaits result only when the bytes matched; a rejection it never awaits is
  // not an unhandled one.
  result.catch(() => {}).finally(() => {
    over = true;
    port1.close();
    resume?.();
  });
  let posted = 0;
  let consumed = 0;
  let resume: (() => void) | null = null;
  port1.on('message', (m: StreamAnswer) => {
    consumed = m.consumed;
    if (posted - consumed <= STREAM_AHEAD) resume?.();
  });
  let batch = new Uint8Array(STREAM_BATCH);
  let filled = 0;
  const send = (m: StreamMessage, transfer: ArrayBuffer[] = []): void => {
    if (!over) port1.postMessage(m, transfer);
  };
  const flush = (): void => {
    if (filled === 0) return;
    const full = batch;
    send({ chunk: full.subarray(0, filled) }, [full.buffer]);
    posted += filled;
    batch = new Uint8Array(STREAM_BATCH);
    filled = 0;
  };
  return {
    async write(chunk) {
      for (let off = 0; off < chunk.length && !over; ) {
        const n = Math.min(chunk.length - off, STREAM_BATCH - filled);
        batch.set(chunk.subarray(off, off + n), filled);
        filled += n;
        off += n;
        if (filled === STREAM_BATCH) flush();
        while (!over && posted - consumed > STREAM_AHEAD) await new Promise<void>((r) => (resume = r));
        resume = null;
      }
    },
    end() {
      flush();
      send({ end: true });
    },
    result,
    async abort() {
      aborter.abort(new StewardError('INTERNAL', `the extraction of ${opts.what} was ended`));
      await result.catch(() => {});
    },
  };
}

// With `stream`, the bytes come on its port, and opts.archivePath only names them.
function runJob(worker: Worker, opts: ExtractOptions, early: { err: unknown } | { code: number } | null, stream?: { port: MessagePort; size: number; what: string }): Promise<ExtractResult> {
  return new Promise<ExtractResult>((resolve, reject) => {
    let settled = false;
    // Waits for the worker to be gone before settling, so nothing writes into dest afterwards.
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      opts.signal?.removeEventListener('abort', onAbort);
      void worker.terminate().finally(fn);
    };
    // 'done' is the worker's last message of a job: every write of it has returned, so it is
    // kept for the next job instead of ended.
    const succeeded = (result: ExtractResult): void => {
      if (settled) return;
      settled = true;
      opts.signal?.removeEventListener('abort', onAbort);
      worker.off('message', onMessage).off('error', failed).off('exit', exited);
      keepWarm(worker);
      resolve(result);
    };
    const what = opts.archive ? 'the archive held in memory' : opts.archivePath;
    const failed = (err: unknown): void => settle(() => reject(toStewardError(err, 'IO_ERROR', `extracting ${what}`)));
    const exited = (code: number): void =>
      settle(() => reject(new StewardError('IO_ERROR', `extracting ${what}: the worker exited (code ${code})`)));
    const onAbort = (): void => settle(() => reject(opts.signal?.reason));
    if (opts.signal?.aborted) return onAbort();
    if (early) return 'err' in early ? failed(early.err) : exited(early.code);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const onMessage = (m: WorkerMessage): void => {
      if (m.type === 'progress') opts.onProgress?.({ entries: m.entries, bytes: m.bytes });
      else if (m.type === 'done') succeeded(m.result);
      else settle(() => reject(new StewardError(m.code, m.message)));
    };
    worker.on('message', onMessage);
    worker.on('error', failed);
    worker.on('exit', exited);
    const common = { dest: opts.dest, finalDir: opts.finalDir, limits: opts.limits };
    if (stream) {
      const job: WorkerJob = { stream, ...common };
      worker.postMessage(job, [stream.port]);
    } else if (opts.archive) {
      const archive = ownBuffer(opts.archive);
      const job: WorkerJob = { archive, ...common };
      // Transferred, not copied: no second copy of the archive, and the main thread can no
      // longer touch the bytes the worker extracts.
      worker.postMessage(job, [archive.buffer as ArrayBuffer]);
    } else {
      const job: WorkerJob = { archivePath: opts.archivePath, ...common };
      worker.postMessage(job);
    }
  });
}

// A Buffer that spans its whole ArrayBuffer, fit for a transfer list: the staging IO makes
// such buffers (writeHashedBuffer); any other is copied into one first. Why: a slice would
// take its neighbours' bytes along, and one of Node's pool is marked untransferable (Node 20
// then copies it in silence, Node 24 throws DataCloneError).
function ownBuffer(b: Buffer): Buffer {
  if (b.byteOffset === 0 && b.byteLength === b.buffer.byteLength) return b;
  const own = Buffer.allocUnsafeSlow(b.length);
  b.copy(own);
  return own;
}
