import type net from 'node:net';
import type { ApiSettings } from '../../core/config-schema.js';
import { StewardError, truncateUtf8 } from '../../core/errors.js';
import { createUploadStream, readRequestLine, type UploadStream } from '../../protocol/framing.js';
import { idSchema } from '../../protocol/answer-schemas.js';
import type { SocketKind } from '../../protocol/schemas.js';
import { logger } from '../../platform/log.js';
import { readPeerCredentials, type PeerLookup } from '../../platform/peer-credentials.js';
import type { Dispatch, OpContext } from './api-server.js';

const debug = logger('helper:server');
// Progress lines are advisory: past this much unread output, a client that does not read gets none.
const MAX_PENDING_PROGRESS = 64 * 1024;
// A stage reported its copy per 64 KiB chunk: ~300 lines for a 19 MB archive, each a socket
// write (~35 ms of the helper's main thread a stage) and a redraw in agentctl. Ten a second
// draw the same bar.
const PROGRESS_EVERY_MS = 100;

// 'line': no complete request line yet (the only state the connection cap may evict);
// 'request': a request is being served; 'closing': the final line is written.
export type ConnectionState = 'line' | 'request' | 'closing';

export interface Connection {
  readonly state: ConnectionState;
  // Answers with a BUSY error line and closes, if still in 'line'. Returns whether it did.
  evict(message: string): boolean;
  // Closes at once without an answer (server shutdown).
  destroy(): void;
}

export interface ConnectionOptions {
  kind: SocketKind;
  settings: ApiSettings;
  dispatch: Dispatch;
  log: (msg: string) => void;
}

// Serves one request on `socket` (docs/design.md §7): reads the line and any upload, calls
// dispatch, writes progress lines and one final line, then closes. Never throws.
export function serveConnection(socket: net.Socket, opts: ConnectionOptions): Connection {
  const { settings } = opts;
  let state: ConnectionState = 'line';
  let id: string | number | null = null;
  let upload: UploadStream | null = null;
  const closed = new AbortController();

  // Why: a client that vanishes makes writes fail with EPIPE; that must never become an unhandled 'error'.
  socket.on('error', (err: NodeJS.ErrnoException) => debug('socket error code=%s', err.code ?? err.message));
  socket.once('close', () => {
    idle.stop();
    closed.abort();
  });

  const idle = makeIdleTimer(settings.idleTimeoutMs, () => {
    const err = new StewardError('BAD_REQUEST', `idle timeout: no bytes from the client for ${settings.idleTimeoutMs} ms`);
    upload?.destroy(err);
    finish(errorLine(id, err));
  });
  socket.on('data', () => idle.touch());

  const finish = (line: string) => {
    if (state === 'closing') return;
    state = 'closing';
    idle.stop();
    const unread = upload !== null && !upload.complete;
    if (upload && !upload.complete) upload.destroy();
    if (socket.destroyed) return;
    // A client that never reads its answer cannot hold the connection longer than this.
    const guard = setTimeout(() => socket.destroy(), settings.idleTimeoutMs);
    guard.unref();
    socket.once('close', () => clearTimeout(guard));
    if (unread) {
      // Lingering close: the client may still be sending upload bytes; drop them until it
      // stops, so that it reads this answer instead of a reset.
      socket.end(line);
      socket.on('data', () => {});
      socket.once('end', () => socket.destroy());
      socket.resume();
    } else {
      socket.end(line, () => socket.destroy());
    }
  };

  // The last progress line sent: a phase's lines are at most one per PROGRESS_EVERY_MS, but its
  // first and its last (bytes reaching total) always go.
  let lastPhase: string | null = null;
  let lastSentAt = 0;
  const progress: OpContext['progress'] = (ev) => {
    if (state === 'closing' || !socket.writable || socket.writableLength > MAX_PENDING_PROGRESS) return;
    const now = performance.now();
    const done = ev.bytes !== undefined && ev.total !== undefined && ev.bytes >= ev.total;
    if (ev.phase === lastPhase && !done && now - lastSentAt < PROGRESS_EVERY_MS) return;
    lastPhase = ev.phase;
    lastSentAt = now;
    const line: Record<string, unknown> = { id, event: 'progress', attemptId: ev.attemptId, phase: ev.phase };
    if (ev.bytes !== undefined) line.bytes = ev.bytes;
    if (ev.total !== undefined) line.total = ev.total;
    socket.write(JSON.stringify(line) + '\n');
  };

  const run = async () => {
    idle.start();
    let request: { line: string; rest: Buffer };
    try {
      request = await readRequestLine(socket, settings.maxRequestBytes);
    } catch (err) {
      if (state !== 'line') return; // evicted or timed out: already answered
      debug('bad request line bytesRead=%d: %s', socket.bytesRead, (err as Error).message);
      opts.log(`rejected a request line after reading ${socket.bytesRead} bytes: ${(err as Error).message}`);
      return finish(errorLine(null, err));
    }
    idle.stop();
    if (state !== 'line') return;
    state = 'request';
    let parsed: unknown;
    try {
      parsed = JSON.parse(request.line);
    } catch {
      return finish(errorLine(null, new StewardError('BAD_REQUEST', 'request line is not valid JSON')));
    }
    id = pickId(parsed);
    let size: number | null;
    try {
      size = announcedUpload(parsed, request.rest.length);
    } catch (err) {
      return finish(errorLine(id, err));
    }
    if (size !== null) {
      upload = createUploadStream(socket, request.rest, size, (waiting) => (waiting ? idle.start() : idle.stop()));
      // Why: the upload can fail before any handler reads it (bytes beyond the announced size in
      // the first read, then a refused op); an 'error' with no listener would crash the helper.
      // A handler that reads still gets the error through its own iteration.
      upload.on('error', (err) => debug('upload failed: %s', err.message));
    }
    let peer: Promise<PeerLookup> | null = null;
    const ctx: OpContext = { kind: opts.kind, id, progress, upload, uploadSize: size ?? 0, closed: closed.signal, peer: () => (peer ??= readPeerCredentials(socket)) };
    try {
      const result = await opts.dispatch(parsed, ctx);
      finish(okLine(id, result));
    } catch (err) {
      if (!(err instanceof StewardError)) opts.log(`op failed with an unexpected error: ${(err as Error)?.stack ?? String(err)}`);
      finish(errorLine(id, err));
    }
  };
  run().catch((err: unknown) => {
    opts.log(`connection handler bug: ${(err as Error)?.stack ?? String(err)}`);
    socket.destroy();
  });

  return {
    get state() {
      return state;
    },
    evict(message) {
      if (state !== 'line') return false;
      finish(errorLine(null, new StewardError('BUSY', message)));
      return true;
    },
    destroy() {
      state = 'closing';
      idle.stop();
      socket.destroy();
    },
  };
}

function makeIdleTimer(ms: number, fire: () => void) {
  let timer: NodeJS.Timeout | null = null;
  return {
    start() {
      if (timer) timer.refresh();
      else timer = setTimeout(fire, ms);
    },
    stop() {
      if (timer) clearTimeout(timer);
      timer = null;
    },
    touch() {
      timer?.refresh();
    },
  };
}

function pickId(parsed: unknown): string | number | null {
  const id = idSchema.safeParse((parsed as { id?: unknown } | null)?.id);
  return id.success ? id.data : null;
}

// The announced upload size, or null; bytes after the line without one are a protocol error.
function announcedUpload(parsed: unknown, leftover: number): number | null {
  const raw = parsed && typeof parsed === 'object' ? (parsed as { upload?: unknown }).upload : undefined;
  if (raw === undefined) {
    if (leftover > 0) throw new StewardError('BAD_REQUEST', 'bytes after the request line, but no upload was announced');
    return null;
  }
  if (typeof raw !== 'number' || !Number.isSafeInteger(raw) || raw < 0) {
    throw new StewardError('BAD_REQUEST', 'upload: must be a byte count');
  }
  return raw;
}

function okLine(id: string | number | null, result: unknown): string {
  try {
    return JSON.stringify({ id, ok: true, result: result ?? null }) + '\n';
  } catch (err) {
    return errorLine(id, new StewardError('INTERNAL', `result is not JSON: ${(err as Error).message}`));
  }
}

function errorLine(id: string | number | null, err: unknown): string {
  const e = err instanceof StewardError ? err : new StewardError('INTERNAL', (err as Error)?.message ?? String(err));
  const error: Record<string, unknown> = { code: e.code, message: truncateUtf8(e.message, 2048) };
  if (typeof e.details.attemptId === 'string') error.attemptId = e.details.attemptId;
  return JSON.stringify({ id, ok: false, error }) + '\n';
}
