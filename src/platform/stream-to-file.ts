import type { Readable } from 'node:stream';
import { StewardError } from '../core/errors.js';
import { fetchFailed } from './fetch-failed.js';
import { writeHashedFile, type HashedFile } from './hashing-writer.js';

export interface StreamToFileOptions {
  stream: Readable; // consumed; destroyed on failure or abort
  destFile: string;
  expectedBytes: number;
  signal?: AbortSignal;
  onProgress?: (bytes: number, total: number) => void;
}

// Stores an upload of exactly expectedBytes into destFile, hashing while writing.
// destFile is removed on any failure.
export async function streamToFile(opts: StreamToFileOptions): Promise<HashedFile> {
  const aborted = () => fetchFailed('the upload was aborted', opts.signal?.reason);
  if (opts.signal?.aborted) {
    opts.stream.destroy();
    throw aborted();
  }
  return writeHashedFile({ destFile: opts.destFile, total: opts.expectedBytes, onProgress: opts.onProgress }, async (w) => {
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
