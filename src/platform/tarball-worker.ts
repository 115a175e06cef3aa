// The extraction worker (worker_threads): node-tar's fast sync path blocks its event loop,
// never the helper's. Reads the archive (from its file, from the Buffer transferred with the
// job, or from the chunks its sender posts as they arrive), gunzips it, feeds UnpackFeed, then checks and seals the tree. Posts progress about every 250 ms, then one 'done' or 'error' per job.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { parentPort, type MessagePort } from 'node:worker_threads';
import zlib from 'node:zlib';
import type { ExtractLimits } from '../core/config-schema.js';
import { compressionOf, createDecompressor, hasZstd, noZstd, type Compression } from '../core/compression.js';
import { StewardError, type ReasonCode } from '../core/errors.js';
import { unsafeMessage } from './tar-entry-rules.js';
import { UnpackFeed } from './tar-unpack-feed.js';
import { checkAndSealTree, type SealedTree } from './tree-walk.js';

// The archive is a file (`archivePath`), or its bytes, already verified, transferred with the
// job (`archive`; it arrives as a Uint8Array), or its bytes as they arrive (`stream`: an
// extraction that overlaps the fetch, docs/design.md §3 step 4; chunks on `port` as StreamMessage,
// `size` the manifest's size, `what` names them in messages: the URL).
export type WorkerJob = (
  | { archivePath: string; archive?: never; stream?: never }
  | { archive: Uint8Array; archivePath?: never; stream?: never }
  | { stream: { port: MessagePort; size: number; what: string }; archivePath?: never; archive?: never }
) & {
  dest: string;
  // Where the tree will live once staged (versions/<ver>), if not at dest.
  finalDir?: string | undefined;
  limits: ExtractLimits;
};

// On a job's stream port: the sender's chunks, in order, then `end`; the worker answers
// `consumed` with the bytes the extraction has taken so far, which the sender keeps its lead over.
export type StreamMessage = { chunk: Uint8Array } | { end: true };
export type StreamAnswer = { consumed: number };

// `integrity`: the sha512 of the archive's bytes as read from its file; null for bytes given in
// memory or streamed, which their sender hashed.
export type WorkerResult = SealedTree & { integrity: string | null };

export type WorkerMessage =
  | { type: 'progress'; entries: number; bytes: number }
  | { type: 'done'; result: WorkerResult }
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

function nameOf(job: WorkerJob): string {
  return job.archive ? 'the archive held in memory' : job.stream ? job.stream.what : job.archivePath;
}

function classify(err: unknown, job: WorkerJob): { code: ReasonCode; message: string } {
  if (err instanceof StewardError) return { code: err.code, message: err.message };
  const e = err as NodeJS.ErrnoException;
  if (e?.code === 'ENOSPC' || e?.code === 'EDQUOT') return { code: 'DISK_FULL', message: `extracting ${nameOf(job)}: no space left on device` };
  // zlib's own errors (Z_BUF_ERROR "unexpected end of file", Z_DATA_ERROR, ...) mean bad input.
  if (typeof e?.code === 'string' && (e.code.startsWith('Z_') || e.code.startsWith('ZSTD_'))) {
    return { code: 'UNSAFE_ARCHIVE', message: unsafeMessage(null, `the ${(job as { compression?: string }).compression ?? 'gzip'} data is corrupt or truncated (${e.message})`) };
  }
  return { code: 'IO_ERROR', message: `extracting ${nameOf(job)} into ${job.dest}: ${e?.message ?? String(err)}` };
}

function openArchive(file: string): { fd: number; size: number } {
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  const st = fs.fstatSync(fd);
  const magic = Buffer.alloc(4);
  const n = st.isFile() ? fs.readSync(fd, magic, 0, 4, 0) : 0;
  if (!st.isFile()) {
    fs.closeSync(fd);
    throw new StewardError('IO_ERROR', `${file} is not a regular file`);
  }
  try {
    compressionOfArchive(magic.subarray(0, n), true);
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
  return { fd, size: st.size };
}

// The compression an archive starts as (docs/design.md §20.5): gzip, or zstd where this
// runtime has it (UNSUPPORTED_COMPRESSION where not); 'short' while fewer bytes than a magic
// are in hand and more may come; UNSAFE_ARCHIVE for anything else.
function compressionOfArchive(head: Uint8Array, ended: boolean): Compression | 'short' {
  const c = compressionOf(head);
  if (c === 'short' && !ended) return 'short';
  if (c === 'zstd' && !hasZstd()) throw noZstd('the archive');
  if (c !== 'gzip' && c !== 'zstd') throw notGzip();
  return c;
}

function notGzip(): StewardError {
  return new StewardError('UNSAFE_ARCHIVE', unsafeMessage(null, 'it is not a gzip file (no 1f 8b magic) nor a zstd one (no 28 b5 2f fd)'));
}

// The archive's bytes as gunzip's input, READ_AHEAD at a time (views, no copies).
async function* slicesOf(archive: Buffer): AsyncGenerator<Buffer> {
  for (let off = 0; off < archive.length; off += READ_AHEAD) yield archive.subarray(off, off + READ_AHEAD);
}

// The chunks a job's sender posts on its port, in order, until `end`; each chunk is counted as
// consumed once the extraction asks for the next one. Refuses bytes that do not start as gzip
// (the magic openArchive checks in a file), whatever the chunks.
async function* fromPort(port: MessagePort): AsyncGenerator<Buffer> {
  const queue: StreamMessage[] = [];
  let wake: (() => void) | null = null;
  port.on('message', (m: StreamMessage) => {
    queue.push(m);
    wake?.();
  });
  // The first bytes, held until they name the compression (checked as openArchive does).
  let head: Buffer | null = Buffer.alloc(0);
  let consumed = 0;
  for (;;) {
    if (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve));
    wake = null;
    const m = queue.shift() as StreamMessage;
    if ('end' in m) {
      if (head !== null) {
        compressionOfArchive(head, true);
        if (head.length > 0) yield head;
      }
      return;
    }
    let chunk = Buffer.from(m.chunk.buffer, m.chunk.byteOffset, m.chunk.byteLength);
    if (head !== null) {
      head = Buffer.concat([head, chunk]);
      if (compressionOfArchive(head, false) === 'short') continue;
      chunk = head;
      head = null;
    }
    yield chunk;
    consumed += chunk.length;
    port.postMessage({ consumed } satisfies StreamAnswer);
  }
}

// `chunks` once its first chunk is in hand (or it ended, or failed): only then is the gunzip
// made, so a job ended before any byte came (a refused fetch) leaves no zlib stream behind. On
// Node 24, a worker terminated around such a job aborted the whole process now and then in its
// teardown (node_zlib.cc, "close before init": a zlib handle never initialised), in 4 of 140 runs
// of security/ca-file-in-a-folder-a-user-owns four at a time; with the gunzip made after the first
// chunk, in none of 240. How the handle came to be uninitialised is not proven.
async function afterFirstChunk(chunks: AsyncIterable<Buffer>): Promise<{ chunks: AsyncIterable<Buffer>; first: Buffer | null }> {
  const it = chunks[Symbol.asyncIterator]();
  const first = await it.next();
  const rest = (async function* () {
    try {
      if (first.done) return;
      yield first.value;
      for (;;) {
        const next = await it.next();
        if (next.done) return;
        yield next.value;
      }
    } finally {
      // Ended early (a failed pipeline): the source is ended too, as the pipeline would have (a
      // file's stream is destroyed, closing the file).
      await it.return?.();
    }
  })();
  return { chunks: rest, first: first.done ? null : first.value };
}

// The archive as gunzip's input, with its compressed size (the ratio cap's denominator),
// a way to let go of it unread, and, for a file, the sha512 of every byte read from it.
interface ArchiveInput {
  chunks: AsyncIterable<Buffer>;
  size: number;
  close(): void;
  digest(): string | null;
}

function openInput(job: WorkerJob): ArchiveInput {
  if (job.stream) {
    const { port, size } = job.stream;
    return { chunks: fromPort(port), size, close: () => port.close(), digest: () => null };
  }
  if (job.archive) {
    const archive = Buffer.from(job.archive.buffer, job.archive.byteOffset, job.archive.byteLength);
    compressionOfArchive(archive, true);
    return { chunks: slicesOf(archive), size: archive.length, close() {}, digest: () => null };
  }
  const { fd, size } = openArchive(job.archivePath);
  const file = fs.createReadStream(job.archivePath, { fd, start: 0, highWaterMark: READ_AHEAD });
  const hash = createHash('sha512');
  // Ending this loop early (a failed pipeline) destroys the stream, which closes the file.
  const hashed = async function* (): AsyncGenerator<Buffer> {
    for await (const chunk of file as AsyncIterable<Buffer>) {
      hash.update(chunk);
      yield chunk;
    }
  };
  return { chunks: hashed(), size, close: () => file.destroy(), digest: () => `sha512-${hash.digest('base64')}` };
}

// Extracts the job's archive into job.dest (created here, 0700; it must not exist yet).
// For an archive file, also returns the SRI sha512 of every byte it read: the caller checks
// that what was extracted is what was verified, so the archive copy needs no fsync of its
// own. An archive given in memory is the verified bytes themselves, and a stream's sender hashed
// them: their integrity is null.
export async function extractInWorker(job: WorkerJob, post: (m: WorkerMessage) => void): Promise<WorkerResult> {
  try {
    return await extractFrom(job, post);
  } finally {
    job.stream?.port.close();
  }
}

async function extractFrom(job: WorkerJob, post: (m: WorkerMessage) => void): Promise<WorkerResult> {
  const input = openInput(job);
  try {
    // Not recursive: EEXIST refuses a dest that exists already, or a symlink planted in its place.
    fs.mkdirSync(job.dest, { mode: 0o700 });
  } catch (err) {
    input.close();
    throw err;
  }
  // Every entry's path must fit PATH_MAX under dest and under finalDir (the tree is renamed
  // there, and run and removed from there): the longer of the two, with its '/'.
  const folders = job.finalDir === undefined ? [job.dest] : [job.dest, job.finalDir];
  const prefixBytes = Math.max(...folders.map((d) => Buffer.byteLength(path.resolve(d), 'utf8'))) + 1;
  const feed = new UnpackFeed(job.dest, job.limits, input.size, prefixBytes);
  let last = Date.now();
  try {
    const { chunks, first } = await afterFirstChunk(input.chunks);
    const c = first ? compressionOfArchive(first, true) : 'gzip';
    // For classify()'s message of a corrupt stream.
    (job as { compression?: string }).compression = c;
    await pipeline(chunks, c === 'zstd' ? createDecompressor('zstd', nameOf(job)) : zlib.createGunzip(GUNZIP_OPTIONS), async (source: AsyncIterable<Buffer>) => {
      for await (const chunk of source) {
        feed.feed(chunk);
        if (Date.now() - last >= PROGRESS_MS) {
          last = Date.now();
          post({ type: 'progress', ...feed.progress });
        }
      }
    });
  } catch (err) {
    input.close();
    throw feed.failure ?? err;
  }
  feed.finish();
  post({ type: 'progress', ...feed.progress });
  return { ...checkAndSealTree(job.dest, feed.written), integrity: input.digest() };
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
