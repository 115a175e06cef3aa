import type { Readable } from 'node:stream';
import { StewardError } from '../core/errors.js';
import { fetchFailed } from './fetch-failed.js';
import { writeHashedBuffer, writeHashedFile, type HashedBuffer, type HashedFile, type HashingWriter } from './hashing-writer.js';

export interface UploadSource {
  stream: Readable; // consumed; destroyed on failure or abort
  expectedBytes: number;
  signal?: AbortSignal;
  onProgress?: (bytes: number, total: number) => void;
}

export interface StreamToFileOptions extends UploadSource {
  destFile: string;
}

// Stores an upload of exactly expectedBytes into destFile, hashing while writing.
// destFile is removed on any failure.
export async function streamToFile(opts: StreamToFileOptions): Promise<HashedFile> {
  return receive(opts, (fill) => writeHashedFile({ destFile: opts.destFile, total: opts.expectedBytes, onProgress: opts.onProgress }, fill));
}

// Reads an upload of exactly expectedBytes into one Buffer of that size, hashing while
// reading, with the same refusals as streamToFile; nothing is written to disk.
export async function streamToMemory(opts: UploadSource): Promise<HashedBuffer> {
  return receive(opts, (fill) => writeHashedBuffer({ size: opts.expectedBytes, total: opts.expectedBytes, onProgress: opts.onProgress }, fill));
}

async function receive<T>(opts: UploadSource, into: (fill: (w: HashingWriter) => Promise<void>) => Promise<T>): Promise<T> {
  const aborted = () => fetchFailed('the upload was aborted', opts.signal?.reason);
  if (opts.signal?.aborted) {
    opts.stream.destroy();
    throw aborted();
  }
  return into(async (w) => {
    const onAbort = () => opts.stream.destroy(aborted());
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for await (const chunk of opts.stream as AsyncIterable<Buffer | string>) {
        const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
        if (w.bytes + buf.length > opts.expectedBytes) {
          throw fetchFailed(`the upload is larger than its announced size (${opts.expectedBytes} bytes)`);
        }
        await w.write(buf);
      }
    } catch (err) {
      if (err instanceof StewardError) throw err;
      throw fetchFailed(`the upload failed after ${w.bytes} bytes: ${(err as Error)?.message ?? String(err)}`, err);
    } finally {
      opts.signal?.removeEventListener('abort', onAbort);
    }
    if (w.bytes < opts.expectedBytes) {
      throw fetchFailed(`the upload is shorter than its announced size (${w.bytes} of ${opts.expectedBytes} bytes)`);
    }
  });
}
