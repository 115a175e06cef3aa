import type { Writable } from 'node:stream';

// Resolves when `stream` drains, or closes (a client gone, a decompressor destroyed): a writer that
// got false from write() waits on this, never on 'drain' alone, which a closed stream never sends.
export function drained(stream: Writable): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      stream.off('drain', done);
      stream.off('close', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
  });
}
