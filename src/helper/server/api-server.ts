import net from 'node:net';
import type { Readable } from 'node:stream';
import type { ApiSettings } from '../../core/config-schema.js';
import type { Progress } from '../../protocol/progress.js';
import type { SocketKind } from '../../protocol/schemas.js';
import { logger } from '../../platform/log.js';
import type { PeerLookup } from '../../platform/peer-credentials.js';
import { bindSocket } from './bind-sockets.js';
import { serveConnection, type Connection } from './connection.js';

const debug = logger('helper:server');

// What a handler gets besides its request.
export interface OpContext {
  kind: SocketKind;
  id: string | number | null;
  // Sends a progress line; dropped when the client is gone or does not read.
  progress(p: Progress): void;
  // Exactly `uploadSize` bytes that follow the request line, or null when none were announced.
  upload: Readable | null;
  uploadSize: number;
  // Aborts when the client goes away. Handlers must NOT cancel work on it (a client
  // that disconnects never cancels an attempt); it only tells them to stop writing.
  closed: AbortSignal;
  // Who connected (SO_PEERCRED), looked up on the first call and remembered; call it early, while
  // the connection is open. Never rejects.
  peer(): Promise<PeerLookup>;
}

// Validates and runs one request (parsed JSON, unvalidated). Throws a StewardError
// for an error answer; anything else thrown is answered as INTERNAL.
export type Dispatch = (request: unknown, ctx: OpContext) => Promise<unknown>;

export interface ApiServerOptions {
  socketPath: string;
  kind: SocketKind;
  settings: ApiSettings;
  dispatch: Dispatch;
  log?: (msg: string) => void;
  // The group that gets helper.sock when running as root (default `steward`).
  group?: string;
}

export interface ApiServer {
  readonly socketPath: string;
  readonly kind: SocketKind;
  // Open connections, answered ones still closing included.
  connectionCount(): number;
  // Stops accepting, drops every connection and removes the socket file. Idempotent.
  close(): Promise<void>;
}

// Serves the local API on one Unix socket (docs/design.md §7): one request per connection,
// at most `settings.maxConnections` at a time. At the cap, the oldest connection that
// has not sent a complete request line is evicted for the new one (so idle
// connections can never lock out `status`); if there is none, the new one gets BUSY.
export async function startApiServer(opts: ApiServerOptions): Promise<ApiServer> {
  const log = opts.log ?? ((msg: string) => debug('%s', msg));
  const conns = new Set<Connection>();
  const connOpts = { kind: opts.kind, settings: opts.settings, dispatch: opts.dispatch, log };

  const server = net.createServer({ allowHalfOpen: true, pauseOnConnect: true }, (socket) => {
    if (liveCount(conns) >= opts.settings.maxConnections) {
      // A Set iterates in insertion order: the first match is the oldest.
      const victim = [...conns].find((c) => c.state === 'line');
      if (!victim) return refuseBusy(socket, opts.settings.idleTimeoutMs);
      victim.evict('too many connections: closing the oldest connection that sent no request');
    }
    const conn = serveConnection(socket, connOpts);
    conns.add(conn);
    socket.once('close', () => conns.delete(conn));
  });
  // Accept errors (EMFILE) must not crash the helper; the listener keeps running.
  server.on('error', (err) => log(`${opts.kind}.sock server error: ${err.message}`));
  await bindSocket(server, opts.socketPath, opts.kind, opts.group);
  debug('listening kind=%s path=%s', opts.kind, opts.socketPath);

  let closing: Promise<void> | null = null;
  return {
    socketPath: opts.socketPath,
    kind: opts.kind,
    connectionCount: () => conns.size,
    close() {
      closing ??= new Promise<void>((resolve) => {
        // net.Server removes the socket file of a path listener when it closes.
        server.close(() => resolve());
        for (const c of conns) c.destroy();
      });
      return closing;
    },
  };
}

function liveCount(conns: Set<Connection>): number {
  let n = 0;
  for (const c of conns) if (c.state !== 'closing') n++;
  return n;
}

// Answers a connection over the cap with BUSY and closes it.
function refuseBusy(socket: net.Socket, guardMs: number): void {
  socket.on('error', () => {});
  const guard = setTimeout(() => socket.destroy(), guardMs);
  guard.unref();
  socket.once('close', () => clearTimeout(guard));
  const line = { id: null, ok: false, error: { code: 'BUSY', message: 'too many connections' } };
  socket.end(JSON.stringify(line) + '\n', () => socket.destroy());
}
