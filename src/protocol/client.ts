import { constants as fsc, promises as fsp } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { StewardError, toStewardError } from '../core/errors.js';
import { progressEventSchema, responseSchema } from './answer-schemas.js';
import type { SocketKind } from './ops.js';
import type { Progress } from './progress.js';

// Errors that mean "no helper there for us": absent, not listening, not allowed.
const UNREACHABLE_CODES = new Set(['ENOENT', 'ECONNREFUSED', 'EACCES', 'EPERM', 'ENOTSOCK', 'EAGAIN']);
// EAGAIN on connect(2) to a Unix socket means its listen backlog is full for a moment
// (a burst of connections); retry for this long before calling the helper unreachable.
const BACKLOG_RETRY_MS = 3000;
// An answer is one line; this bounds what a broken helper can make the CLI buffer.
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

export interface CallOptions {
  // Exactly `size` bytes streamed after the request line (the request must say `upload: size`).
  upload?: { size: number; stream: Readable };
  // Gets each progress line (checked by progressEventSchema, its unknown keys dropped).
  onProgress?: (p: Progress) => void;
  // Fails with HELPER_UNREACHABLE after this long without a byte from the helper.
  timeoutMs?: number;
}

// Sends one request to the helper and resolves with its `result`. An error line
// throws StewardError(code, message) with details.attemptId; a helper that is
// absent, refuses or ends without a final line throws HELPER_UNREACHABLE.
export async function callHelper(socketPath: string, request: object, opts: CallOptions = {}): Promise<unknown> {
  const deadline = performance.now() + BACKLOG_RETRY_MS;
  for (let delay = 5; ; delay = Math.min(delay * 2, 100)) {
    try {
      return await callOnce(socketPath, request, opts);
    } catch (err) {
      const busy = err instanceof StewardError && err.details.connectErrno === 'EAGAIN';
      if (!busy || performance.now() + delay > deadline) throw err;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

function callOnce(socketPath: string, request: object, opts: CallOptions): Promise<unknown> {
  return new Promise((resolve, reject) => {
    let settled = false;
    let connected = false;
    let pending: Buffer = Buffer.alloc(0);
    let timer: NodeJS.Timeout | null = null;
    const socket = net.createConnection(socketPath);
    const src = opts.upload?.stream;

    const done = (err: Error | null, value?: unknown) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      if (src && !src.readableEnded) src.destroy();
      socket.destroy();
      if (err) reject(err);
      else resolve(value);
    };
    const unreachable = (message: string, cause?: NodeJS.ErrnoException) =>
      new StewardError('HELPER_UNREACHABLE', message, cause === undefined ? {} : { cause, details: { connectErrno: connected ? undefined : cause.code } });

    if (opts.timeoutMs !== undefined) {
      const ms = opts.timeoutMs;
      timer = setTimeout(() => done(unreachable(`no answer from the helper at ${socketPath} within ${ms} ms`)), ms);
    }

    socket.on('connect', () => {
      connected = true;
      socket.write(JSON.stringify(request) + '\n');
      if (!opts.upload || !src) return void socket.end();
      const size = opts.upload.size;
      let sent = 0;
      src.on('data', (chunk: Buffer) => {
        sent += chunk.length;
        if (sent > size) return done(new StewardError('IO_ERROR', `upload gave more than the announced ${size} bytes`));
        if (!socket.write(chunk)) {
          src.pause();
          socket.once('drain', () => src.resume());
        }
      });
      src.once('end', () => {
        if (sent !== size) return done(new StewardError('IO_ERROR', `upload gave ${sent} of the announced ${size} bytes`));
        socket.end();
      });
      src.once('error', (err) => done(toStewardError(err, 'IO_ERROR', 'reading the upload')));
    });

    socket.on('data', (chunk: Buffer) => {
      timer?.refresh();
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      let nl: number;
      while (!settled && (nl = pending.indexOf(0x0a)) >= 0) {
        const line = pending.subarray(0, nl).toString('utf8');
        pending = pending.subarray(nl + 1);
        handleLine(line);
      }
      if (!settled && pending.length > MAX_ANSWER_BYTES) done(new StewardError('INTERNAL', 'the helper sent an answer line over 64 MiB'));
    });

    const handleLine = (line: string) => {
      let obj: unknown;
      try {
        obj = JSON.parse(line);
      } catch {
        return done(new StewardError('INTERNAL', 'the helper sent a line that is not JSON'));
      }
      const ev = progressEventSchema.safeParse(obj);
      if (ev.success) {
        try {
          opts.onProgress?.(ev.data);
        } catch (err) {
          done(toStewardError(err));
        }
        return;
      }
      const parsed = responseSchema.safeParse(obj);
      if (!parsed.success) return done(new StewardError('INTERNAL', 'the helper sent an answer this client does not understand'));
      const res = parsed.data;
      if (res.ok) return done(null, res.result);
      const e = res.error;
      done(new StewardError(e.code, e.message, { details: e.attemptId ? { attemptId: e.attemptId } : {} }));
    };

    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (!connected && UNREACHABLE_CODES.has(err.code ?? '')) {
        return done(unreachable(`cannot reach the helper at ${socketPath} (${err.code})`, err));
      }
      done(unreachable(`lost the connection to the helper at ${socketPath} (${err.code ?? err.message})`, err));
    });
    socket.on('close', () => done(unreachable(`the helper at ${socketPath} closed the connection without an answer`)));
  });
}

// docs/design.md §8: `--socket` wins (admin.sock if its file name says so); otherwise
// admin.sock when this process may open it, else helper.sock.
export async function pickSocket(
  paths: { adminSock: string; helperSock: string },
  explicit?: string,
): Promise<{ path: string; kind: SocketKind }> {
  if (explicit) return { path: explicit, kind: path.basename(explicit) === 'admin.sock' ? 'admin' : 'helper' };
  try {
    await fsp.access(paths.adminSock, fsc.W_OK);
    return { path: paths.adminSock, kind: 'admin' };
  } catch {
    return { path: paths.helperSock, kind: 'helper' };
  }
}
