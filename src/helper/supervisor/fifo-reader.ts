// Reads an app's FIFO (app-fds.ts) without ever blocking the helper: opened O_RDONLY|O_NONBLOCK
// (an open that never waits for a writer), read through libuv's poll as a net.Socket. The bytes
// are the app's and hostile: each chunk (at most 64 KiB, the pipe's size) is only scanned for a
// newline and dropped, nothing is kept. `closed` is told when every writer has closed the FIFO
// (the app closed its fd or exited): Linux reports that end only once a writer has had it open
// since this reader's open, so a reader opened before the app starts sees no end until the app
// has come and gone.
import { closeSync, constants as C, fstatSync, openSync, readSync } from 'node:fs';
import net from 'node:net';
import { StewardError } from '../../core/errors.js';

export interface FifoEvents {
  // A chunk with at least one newline arrived.
  newline(): void;
  // Every writer closed it (an end after a writer had it open).
  closed(): void;
}

export interface FifoReader {
  // Stops reading and closes the helper's fd. Idempotent.
  close(): void;
}

// Opens `p` for reading. With `drain`, bytes already in the pipe (a process before this start
// wrote them) are read and dropped first.
export function openFifoReader(p: string, events: FifoEvents, opts: { drain?: boolean } = {}): FifoReader {
  const fd = openSync(p, C.O_RDONLY | C.O_NONBLOCK | C.O_NOFOLLOW);
  try {
    if (!fstatSync(fd).isFIFO()) throw new StewardError('IO_ERROR', `${p} is not a FIFO`);
    if (opts.drain) drainNow(fd);
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  const sock = new net.Socket({ fd, readable: true, writable: false });
  let done = false;
  sock.on('data', (chunk: Buffer) => {
    if (!done && chunk.includes(0x0a)) events.newline();
  });
  sock.on('end', () => {
    if (!done) events.closed();
  });
  // A read error is an end as far as the app's fd goes.
  sock.on('error', () => {
    if (!done) events.closed();
  });
  // The helper may stop while an app runs: a reader never keeps it up.
  sock.unref();
  return {
    close: () => {
      if (done) return;
      done = true;
      sock.destroy();
    },
  };
}

// Reads what the pipe holds now and drops it, at most 1 MiB (a pipe holds 64 KiB unless someone
// grew it); EAGAIN (empty) or 0 (no writer) ends it.
function drainNow(fd: number): void {
  const buf = Buffer.allocUnsafe(65_536);
  for (let total = 0; total < 1 << 20; ) {
    let n: number;
    try {
      n = readSync(fd, buf, 0, buf.length, null);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EAGAIN') return;
      throw err;
    }
    if (n === 0) return;
    total += n;
  }
}
