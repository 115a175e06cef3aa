import { constants as fsc, promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { StewardError, toStewardError } from '../core/errors.js';
import { fetchFailed } from './fetch-failed.js';
import { writeHashedBuffer, writeHashedFile, type HashedBuffer, type HashedFile, type HashingWriter } from './hashing-writer.js';

export interface CopyLocalSource {
  path: string;
  maxBytes: number;
  // The file must hold exactly maxBytes (a `file:` URL from a manifest); else at most maxBytes.
  exactSize?: boolean;
  signal?: AbortSignal;
  onProgress?: (bytes: number, total: number) => void;
}

export interface CopyLocalOptions extends CopyLocalSource {
  destFile: string;
}

const COPY_CHUNK = 1 << 20;

// Copies a local file (admin.sock) into destFile, hashing while copying. The source is
// opened with O_NOFOLLOW and must be a regular file; destFile is removed on any failure.
export async function copyLocalToFile(opts: CopyLocalOptions): Promise<HashedFile> {
  return copyLocal(opts, (total, fill) => writeHashedFile({ destFile: opts.destFile, total, onProgress: opts.onProgress }, fill));
}

// Reads a local file (admin.sock) into one Buffer of maxBytes, hashing while reading, under
// the same rules and with the same refusals as copyLocalToFile; nothing is written to disk.
// The Buffer is only as long as the bytes read (fewer than maxBytes unless exactSize).
export async function copyLocalToMemory(opts: CopyLocalSource): Promise<HashedBuffer> {
  return copyLocal(opts, (total, fill) => writeHashedBuffer({ size: opts.maxBytes, total, onProgress: opts.onProgress }, fill));
}

async function copyLocal<T>(opts: CopyLocalSource, into: (total: number, fill: (w: HashingWriter) => Promise<void>) => Promise<T>): Promise<T> {
  const sizeName = opts.exactSize ? "the manifest's size" : 'the allowed size';
  let fh: FileHandle;
  try {
    // O_NONBLOCK: opening a FIFO for reading must not wait for a writer before fstat refuses it.
    fh = await fsp.open(opts.path, fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK | fsc.O_NOCTTY);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new StewardError('NOT_FOUND', `${opts.path} does not exist`, { cause: err });
    if (code === 'ELOOP') throw fetchFailed(`${opts.path} is a symbolic link, not a regular file`, err);
    throw toStewardError(err, 'FETCH_FAILED', `cannot open ${opts.path}`);
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw fetchFailed(`${opts.path} is not a regular file`);
    if (st.size > opts.maxBytes) throw fetchFailed(`${opts.path} is larger than ${sizeName} (${st.size} > ${opts.maxBytes} bytes)`);
    if (opts.exactSize && st.size < opts.maxBytes) {
      throw fetchFailed(`${opts.path} is shorter than ${sizeName} (${st.size} < ${opts.maxBytes} bytes)`);
    }
    if (opts.signal?.aborted) throw fetchFailed(`copy of ${opts.path} aborted`, opts.signal.reason);
    const total = opts.exactSize ? opts.maxBytes : st.size;
    return await into(total, async (w) => {
      // 1 MiB: each read and each write is a round trip through the thread pool (64 KiB made
      // 600 of them for a 19 MB archive); the hash of one chunk holds the event loop ~2 ms.
      const buf = Buffer.allocUnsafe(COPY_CHUNK);
      for (;;) {
        if (opts.signal?.aborted) throw fetchFailed(`copy of ${opts.path} aborted`, opts.signal.reason);
        const { bytesRead } = await fh.read(buf, 0, buf.length, null).catch((err: unknown) => {
          throw toStewardError(err, 'IO_ERROR', `reading ${opts.path}`);
        });
        if (bytesRead === 0) break;
        // The file may grow after fstat: the limit holds on the bytes actually read.
        if (w.bytes + bytesRead > opts.maxBytes) throw fetchFailed(`${opts.path} is larger than ${sizeName} (${opts.maxBytes} bytes)`);
        await w.write(buf.subarray(0, bytesRead));
      }
      if (opts.exactSize && w.bytes < opts.maxBytes) {
        throw fetchFailed(`${opts.path} is shorter than ${sizeName} (${w.bytes} < ${opts.maxBytes} bytes)`);
      }
    });
  } finally {
    await fh.close().catch(() => {});
  }
}
