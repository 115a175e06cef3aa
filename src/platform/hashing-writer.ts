import { createHash } from 'node:crypto';
import { constants as fsc, promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { StewardError, toStewardError } from '../core/errors.js';

// The bytes written and their SRI token (`sha512-<base64>`).
export interface HashedFile {
  bytes: number;
  integrity: string;
}

// The same for bytes held in memory, with the bytes: `archive` is exactly `bytes` long and
// owns its whole ArrayBuffer (never a slice of Node's Buffer pool), so that staging can
// transfer it to the extraction worker.
export interface HashedBuffer extends HashedFile {
  archive: Buffer;
}

// A sink that hashes and writes each chunk, in order. `write` throws a StewardError
// (DISK_FULL on ENOSPC, else IO_ERROR) and must not be called again after it throws.
export interface HashingWriter {
  readonly bytes: number;
  write(chunk: Uint8Array): Promise<void>;
}

export interface HashedFileOptions {
  destFile: string;
  // Passed to onProgress as the expected total.
  total: number;
  onProgress?: (bytes: number, total: number) => void;
}

// Creates destFile (O_EXCL|O_NOFOLLOW, 0600), lets `fill` write into it through a hashing
// writer and returns the hash. On any failure the file is removed, unless it could not be
// created (an existing file is not ours to remove).
// No fsync: the file is a staging archive, read once and removed before the tree's syncfs.
// Why that is safe: the extraction hashes every byte it reads back and staging refuses a
// mismatch, so bytes lost by a failed writeback can never be extracted as verified ones;
// and a power cut only leaves a staging folder that the next start removes. An fsync here
// would write the whole archive to disk for nothing the peer pays (bench/README.md, "Figures
// behind choices in the code").
export async function writeHashedFile(
  opts: HashedFileOptions,
  fill: (writer: HashingWriter) => Promise<void>,
): Promise<HashedFile> {
  let fh: FileHandle;
  try {
    fh = await fsp.open(opts.destFile, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600);
  } catch (err) {
    throw toStewardError(err, 'IO_ERROR', `cannot create ${opts.destFile}`);
  }
  const write = async (chunk: Uint8Array): Promise<void> => {
    try {
      let off = 0;
      while (off < chunk.length) {
        const { bytesWritten } = await fh.write(chunk, off, chunk.length - off);
        off += bytesWritten;
      }
    } catch (err) {
      throw toStewardError(err, 'IO_ERROR', `writing ${opts.destFile}`);
    }
  };
  try {
    const hashed = await hashInto(opts, write, fill);
    await fh.close();
    return hashed;
  } catch (err) {
    await fh.close().catch(() => {});
    // A partial or unverified download must never be mistaken for a good one.
    await fsp.rm(opts.destFile, { force: true }).catch(() => {});
    throw err instanceof StewardError ? err : toStewardError(err, 'INTERNAL', `writing ${opts.destFile}`);
  }
}

export interface HashedBufferOptions {
  // How many bytes are expected: the buffer is allocated once, at this size. A fill that
  // writes more throws; the callers refuse such input before it reaches the writer.
  size: number;
  // Passed to onProgress as the expected total.
  total: number;
  onProgress?: (bytes: number, total: number) => void;
}

// Lets `fill` write into one Buffer of `opts.size` bytes through a hashing writer (the same
// writer as writeHashedFile's, so that a copy or an upload fills either the same way) and
// returns the bytes with their hash. Nothing touches the disk.
export async function writeHashedBuffer(
  opts: HashedBufferOptions,
  fill: (writer: HashingWriter) => Promise<void>,
): Promise<HashedBuffer> {
  // allocUnsafeSlow: a buffer of its own, not a slice of the pool (see HashedBuffer). Not
  // zeroed: every byte handed on is one written below.
  let buf = Buffer.allocUnsafeSlow(opts.size);
  let filled = 0;
  let hashed: HashedFile;
  try {
    hashed = await hashInto(
      opts,
      async (chunk) => {
        if (filled + chunk.length > buf.length) throw new StewardError('INTERNAL', `more than the ${buf.length} bytes expected were written`);
        buf.set(chunk, filled);
        filled += chunk.length;
      },
      fill,
    );
  } catch (err) {
    throw err instanceof StewardError ? err : toStewardError(err, 'INTERNAL', 'reading the archive into memory');
  }
  if (hashed.bytes < buf.length) {
    // Fewer bytes than expected but accepted by the caller (a local file shorter than the
    // allowed size): copied into a buffer of their own length, which owns its ArrayBuffer.
    const exact = Buffer.allocUnsafeSlow(hashed.bytes);
    buf.copy(exact, 0, 0, hashed.bytes);
    buf = exact;
  }
  return { ...hashed, archive: buf };
}

// Hashes each chunk that `fill` writes and hands it to `sink`, in order, and returns the hash:
// the writer of writeHashedFile (the sink writes the file) and writeHashedBuffer (it copies into
// the buffer), and of bytes that go elsewhere (an extraction fed as they arrive, docs/design.md §3 step
// 4). The chunk is hashed before `sink` sees it, so the sink may take it (transfer its memory to
// another thread); it is counted once the sink took it. A sink error is thrown from write as it
// came, and write must not be called again after it threw.
export async function hashInto(
  opts: Omit<HashedFileOptions, 'destFile'>,
  sink: (chunk: Uint8Array) => Promise<void>,
  fill: (writer: HashingWriter) => Promise<void>,
): Promise<HashedFile> {
  const hash = createHash('sha512');
  let bytes = 0;
  await fill({
    get bytes() {
      return bytes;
    },
    async write(chunk) {
      hash.update(chunk);
      await sink(chunk);
      bytes += chunk.length;
      opts.onProgress?.(bytes, opts.total);
    },
  });
  return { bytes, integrity: `sha512-${hash.digest('base64')}` };
}
