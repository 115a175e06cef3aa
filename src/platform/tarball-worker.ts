// The extraction worker (worker_threads): node-tar's fast sync path blocks its event loop,
// never the helper's. Reads the archive, gunzips it, feeds UnpackFeed, then checks and
// seals the tree. Posts progress about every 250 ms, then one 'done' or 'error' per job.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { parentPort } from 'node:worker_threads';
import zlib from 'node:zlib';
import type { ExtractLimits } from '../core/config-schema.js';
import { StewardError, type ReasonCode } from '../core/errors.js';
import { unsafeMessage } from './tar-entry-rules.js';
import { UnpackFeed } from './tar-unpack-feed.js';
import { checkAndSealTree, type SealedTree } from './tree-walk.js';

export interface WorkerJob {
  archivePath: string;
  dest: string;
  // Where the tree will live once staged (versions/<ver>), if not at dest.
  finalDir?: string | undefined;
  limits: ExtractLimits;
}

export type WorkerMessage =
  | { type: 'progress'; entries: number; bytes: number }
  | { type: 'done'; result: SealedTree & { integrity: string } }
  | { type: 'error'; code: ReasonCode; message: string };

// gunzip's output buffers: each one is a round trip to the thread pool and a callback here.
const CHUNK = 256 * 1024;
const PROGRESS_MS = 250;
const READ_AHEAD = 1 << 20;
// How far gunzip (in the thread pool, on the other core) may run ahead of the parse and the
// writes on this thread, and how much read input it may queue: with the defaults (16 KiB)
// it stopped after each chunk until this thread came back for the next.
// zlib passes the stream options on to its Transform; @types/node's ZlibOptions omits them.
const GUNZIP_OPTIONS = { chunkSize: CHUNK, readableHighWaterMark: 4 << 20, writableHighWaterMark: 4 << 20 } as zlib.ZlibOptions;

function classify(err: unknown, job: WorkerJob): { code: ReasonCode; message: string } {
  if (err instanceof StewardError) return { code: err.code, message: err.message };
  const e = err as NodeJS.ErrnoException;
  if (e?.code === 'ENOSPC' || e?.code === 'EDQUOT') return { code: 'DISK_FULL', message: `extracting ${job.archivePath}: no space left on device` };
  // zlib's own errors (Z_BUF_ERROR "unexpected end of file", Z_DATA_ERROR, ...) mean bad input.
  if (typeof e?.code === 'string' && e.code.startsWith('Z_')) {
    return { code: 'UNSAFE_ARCHIVE', message: unsafeMessage(null, `the gzip data is corrupt or truncated (${e.message})`) };
  }
  return { code: 'IO_ERROR', message: `extracting ${job.archivePath} into ${job.dest}: ${e?.message ?? String(err)}` };
}

function openArchive(file: string): { fd: number; size: number } {
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  const st = fs.fstatSync(fd);
  const magic = Buffer.alloc(2);
  const n = st.isFile() ? fs.readSync(fd, magic, 0, 2, 0) : 0;
  if (!st.isFile()) {
    fs.closeSync(fd);
    throw new StewardError('IO_ERROR', `${file} is not a regular file`);
  }
  if (n < 2 || magic[0] !== 0x1f || magic[1] !== 0x8b) {
    fs.closeSync(fd);
    throw new StewardError('UNSAFE_ARCHIVE', unsafeMessage(null, 'it is not a gzip file (no 1f 8b magic)'));
  }
  return { fd, size: st.size };
}

// Extracts job.archivePath into job.dest (created here, 0700; it must not exist yet).
// Also returns the SRI sha512 of every byte it read: the caller checks that what was
// extracted is what was verified, so the archive copy needs no fsync of its own.
export async function extractInWorker(job: WorkerJob, post: (m: WorkerMessage) => void): Promise<SealedTree & { integrity: string }> {
  const { fd, size } = openArchive(job.archivePath);
  const input = fs.createReadStream(job.archivePath, { fd, start: 0, highWaterMark: READ_AHEAD });
  try {
    // Not recursive: EEXIST refuses a dest that exists already, or a symlink planted in its place.
    fs.mkdirSync(job.dest, { mode: 0o700 });
  } catch (err) {
    input.destroy();
    throw err;
  }
  // Every entry's path must fit PATH_MAX under dest and under finalDir (the tree is renamed
  // there, and run and removed from there): the longer of the two, with its '/'.
  const folders = job.finalDir === undefined ? [job.dest] : [job.dest, job.finalDir];
  const prefixBytes = Math.max(...folders.map((d) => Buffer.byteLength(path.resolve(d), 'utf8'))) + 1;
  const feed = new UnpackFeed(job.dest, job.limits, size, prefixBytes);
  const hash = createHash('sha512');
  const hashed = async function* (source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
    for await (const chunk of source) {
      hash.update(chunk);
      yield chunk;
    }
  };
  let last = Date.now();
  try {
    await pipeline(input, hashed, zlib.createGunzip(GUNZIP_OPTIONS), async (source: AsyncIterable<Buffer>) => {
      for await (const chunk of source) {
        feed.feed(chunk);
        if (Date.now() - last >= PROGRESS_MS) {
          last = Date.now();
          post({ type: 'progress', ...feed.progress });
        }
      }
    });
  } catch (err) {
    throw feed.failure ?? err;
  }
  feed.finish();
  post({ type: 'progress', ...feed.progress });
  return { ...checkAndSealTree(job.dest, feed.written), integrity: `sha512-${hash.digest('base64')}` };
}

// Started ahead of its job (prepareExtraction): runs each job it is given, one at a time; the
// caller gives another only after 'done', and terminates it after anything else.
if (parentPort) {
  const port = parentPort;
  const post = (m: WorkerMessage): void => port.postMessage(m);
  port.on('message', (job: WorkerJob) => {
    extractInWorker(job, post).then(
      (result) => post({ type: 'done', result }),
      (err: unknown) => post({ type: 'error', ...classify(err, job) }),
    );
  });
}
