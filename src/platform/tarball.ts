import { Worker } from 'node:worker_threads';
import type { ExtractLimits } from '../core/config-schema.js';
import { StewardError, toStewardError } from '../core/errors.js';
import type { WorkerJob, WorkerMessage } from './tarball-worker.js';

export interface ExtractOptions {
  archivePath: string;
  dest: string; // must not exist yet; its parent is a 0700 staging folder the caller made
  limits: ExtractLimits;
  onProgress?: (p: { entries: number; bytes: number }) => void;
  signal?: AbortSignal;
}

export interface ExtractResult {
  entries: number;
  bytes: number;
  treeDigest: string; // 'sha256-' + base64 (44 characters)
  integrity: string; // 'sha512-' + base64 of every archive byte the extraction read
}

// Extracts a .tar.gz into `dest` inside a worker thread (the helper keeps answering while it
// stages), checking every entry before it is written and the whole tree after (DESIGN §3.4).
// The tree comes back root-owned (when root) and read-only; `dest` itself stays 0700.
// Throws UNSAFE_ARCHIVE for a hostile or malformed archive, DISK_FULL, or IO_ERROR; on any
// failure `dest` may hold partial content and the caller removes the staging folder.
// An abort terminates the worker and rejects with the signal's reason.
export async function extractArchive(opts: ExtractOptions): Promise<ExtractResult> {
  opts.signal?.throwIfAborted();
  const job: WorkerJob = { archivePath: opts.archivePath, dest: opts.dest, limits: opts.limits };
  const worker = new Worker(new URL('./tarball-worker.js', import.meta.url), { workerData: job });
  return new Promise<ExtractResult>((resolve, reject) => {
    let settled = false;
    // Waits for the worker to be gone before settling, so nothing writes into dest afterwards.
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      opts.signal?.removeEventListener('abort', onAbort);
      void worker.terminate().finally(fn);
    };
    const onAbort = (): void => settle(() => reject(opts.signal?.reason));
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (m: WorkerMessage) => {
      if (m.type === 'progress') opts.onProgress?.({ entries: m.entries, bytes: m.bytes });
      else if (m.type === 'done') settle(() => resolve(m.result));
      else settle(() => reject(new StewardError(m.code, m.message)));
    });
    worker.on('error', (err) => settle(() => reject(toStewardError(err, 'IO_ERROR', `extracting ${opts.archivePath}`))));
    worker.on('exit', (code) =>
      settle(() => reject(new StewardError('IO_ERROR', `extracting ${opts.archivePath}: the worker exited (code ${code})`))),
    );
  });
}
