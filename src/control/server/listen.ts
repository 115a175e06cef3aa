// What every steward-control listener does the same way (the fleet's, --admin-listen's,
// --metrics-listen's): listen and learn its URL, and close once however often it is asked.
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { StewardError } from '../../core/errors.js';

// How long a closing listener lets the answers in flight finish before it cuts their connections.
export const CLOSE_DRAIN_MS = 10_000;

export interface Listening {
  url: string;
  // Stops listening, answers what is in flight with `connection: close` and cuts what is left
  // after CLOSE_DRAIN_MS (`before` first, once). Idempotent.
  close(before?: () => void): Promise<void>;
}

// Listens on host:port (port 0: a free one) and resolves once it does. A bind error (the port
// taken, an address this host does not have, a port below 1024 without the right) rejects with
// USAGE naming the address: the command line names one that cannot be used here.
export async function listen(server: http.Server, host: string, port: number, secure: boolean): Promise<Listening> {
  await new Promise<void>((resolve, reject) => {
    const refused = (err: NodeJS.ErrnoException) => reject(bindError(err, host, port));
    server.once('error', refused);
    server.listen(port, host, () => {
      server.off('error', refused);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const shown = addr.family === 'IPv6' || addr.address.includes(':') ? `[${addr.address}]` : addr.address;
  let closed: Promise<void> | null = null;
  return {
    url: `${secure ? 'https' : 'http'}://${shown}:${addr.port}`,
    close: (before) =>
      (closed ??= new Promise<void>((resolve) => {
        before?.();
        // Why more than server.close(): on Node 20 a connection that is never idle when close()
        // drops the idle ones (an agent heartbeating every 2 s under the 5 s keep-alive) kept
        // close() from ending for minutes. From now on every answer closes its connection, the
        // idle ones are dropped as they become idle, and whatever is left after CLOSE_DRAIN_MS
        // (a download in flight: the helper resumes it elsewhere) is cut.
        server.on('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
          if (!res.headersSent) res.setHeader('connection', 'close');
        });
        const sweep = setInterval(() => server.closeIdleConnections(), 250);
        const cut = setTimeout(() => server.closeAllConnections(), CLOSE_DRAIN_MS);
        server.close(() => {
          clearInterval(sweep);
          clearTimeout(cut);
          resolve();
        });
        server.closeIdleConnections();
      })),
  };
}

const BIND_REASONS: Record<string, string> = {
  EADDRINUSE: 'the address is in use (another process listens on it)',
  EADDRNOTAVAIL: 'this host has no such address',
  EACCES: 'not allowed to listen on that port (below 1024 needs CAP_NET_BIND_SERVICE)',
};

function bindError(err: NodeJS.ErrnoException, host: string, port: number): StewardError {
  const shown = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  const why = (err.code && BIND_REASONS[err.code]) ?? err.message;
  return new StewardError('USAGE', `cannot listen on ${shown}: ${why}${err.code ? ` (${err.code})` : ''}`, { cause: err });
}

// The limits of a listener that nodes or operators reach: headers within 15 s, an idle socket
// closed after 60 s, keep-alive 5 s, a request in all within `requestTimeoutMs` (0: none), and a
// malformed request answered 400 and closed.
export const IDLE_SOCKET_MS = 60_000;
export function limitConnections(server: http.Server, requestTimeoutMs: number): void {
  server.requestTimeout = requestTimeoutMs;
  server.headersTimeout = 15_000;
  server.keepAliveTimeout = 5_000;
  server.setTimeout(IDLE_SOCKET_MS, (socket) => socket.destroy());
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });
}
