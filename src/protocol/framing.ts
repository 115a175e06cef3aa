import type { Duplex } from 'node:stream';
import { Readable } from 'node:stream';
import { StewardError } from '../core/errors.js';

// Framing of one request on a socket (docs/design.md §7): a first line of at most
// `maxBytes` bytes (the '\n' not counted), then optionally exactly N upload bytes.

export interface RequestLine {
  // The line without its '\n', as UTF-8 text.
  line: string;
  // Bytes the client sent after the '\n' in the same reads: the start of an upload.
  rest: Buffer;
}

// Reads the request line. Rejects with BAD_REQUEST as soon as more than `maxBytes`
// arrive without a '\n' (never buffering more than one read beyond the limit), or
// when the socket ends first. Leaves the socket paused on return.
export function readRequestLine(socket: Duplex, maxBytes: number): Promise<RequestLine> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const cleanup = () => {
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('close', onEnd);
      socket.off('error', onEnd);
      // Stop reading: what follows belongs to the upload reader, or to no one.
      socket.pause();
    };
    const tooLong = () => {
      cleanup();
      reject(new StewardError('BAD_REQUEST', `request line longer than ${maxBytes} bytes`));
    };
    const onData = (chunk: Buffer) => {
      const nl = chunk.indexOf(0x0a);
      if (nl < 0) {
        total += chunk.length;
        if (total > maxBytes) return tooLong();
        chunks.push(chunk);
        return;
      }
      if (total + nl > maxBytes) return tooLong();
      chunks.push(chunk.subarray(0, nl));
      cleanup();
      resolve({ line: Buffer.concat(chunks).toString('utf8'), rest: chunk.subarray(nl + 1) });
    };
    const onEnd = () => {
      cleanup();
      reject(new StewardError('BAD_REQUEST', `connection ended after ${total} bytes without a complete request line`));
    };
    socket.on('data', onData);
    socket.on('end', onEnd);
    socket.on('close', onEnd);
    socket.on('error', onEnd);
    socket.resume();
  });
}

export interface UploadStream extends Readable {
  // Bytes taken from the client so far.
  readonly received: number;
  // Whether all `size` bytes arrived.
  readonly complete: boolean;
}

// The upload that follows the request line: a Readable of exactly `size` bytes,
// `leftover` first, then socket data. The socket is paused while the consumer is
// slow. Errors with BAD_REQUEST if the socket ends early or sends more than `size`.
// `onWaiting(true)` means the reader now waits for the client (an idle timer may
// run); `onWaiting(false)` means it does not (paused, done or failed).
export function createUploadStream(
  socket: Duplex,
  leftover: Buffer,
  size: number,
  onWaiting: (waiting: boolean) => void = () => {},
): UploadStream {
  let received = 0;
  let done = false;
  const detach = () => {
    socket.off('data', onData);
    socket.off('end', onEnded);
    socket.off('close', onEnded);
    socket.off('error', onEnded);
    socket.pause();
    onWaiting(false);
  };
  const finish = (err?: Error) => {
    if (done) return;
    done = true;
    detach();
    if (err) stream.destroy(err);
    else stream.push(null);
  };
  const accept = (chunk: Buffer) => {
    if (done) return;
    if (chunk.length > size - received) {
      return finish(new StewardError('BAD_REQUEST', `upload longer than the announced ${size} bytes`));
    }
    received += chunk.length;
    const more = chunk.length === 0 || stream.push(chunk);
    if (received === size) return finish();
    if (!more) {
      // Backpressure: leave the bytes in the kernel until the consumer asks again.
      socket.pause();
      onWaiting(false);
    }
  };
  const onData = (chunk: Buffer) => accept(chunk);
  const onEnded = () =>
    finish(new StewardError('BAD_REQUEST', `upload ended after ${received} of ${size} bytes`));

  const stream = new Readable({
    highWaterMark: 64 * 1024,
    read() {
      if (done) return;
      onWaiting(true);
      socket.resume();
    },
    destroy(err, cb) {
      if (!done) {
        done = true;
        detach();
      }
      cb(err);
    },
  }) as UploadStream;
  Object.defineProperties(stream, {
    received: { get: () => received },
    complete: { get: () => received === size && done },
  });

  accept(leftover);
  if (!done) {
    if (socket.readableEnded || socket.destroyed) onEnded();
    else {
      socket.on('data', onData);
      socket.on('end', onEnded);
      socket.on('close', onEnded);
      socket.on('error', onEnded);
      // Stay paused until the consumer reads.
      socket.pause();
    }
  }
  return stream;
}
