// What every steward-control listener does the same way (the fleet's, --admin-listen's,
// --metrics-listen's): listen and learn its URL, and close once however often it is asked.
import type http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Listening {
  url: string;
  // Stops listening and drops idle connections (`before` first, once). Idempotent.
  close(before?: () => void): Promise<void>;
}

// Listens on host:port (port 0: a free one) and resolves once it does; rejects on a bind error.
export async function listen(server: http.Server, host: string, port: number, secure: boolean): Promise<Listening> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
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
        server.close(() => resolve());
        server.closeIdleConnections();
      })),
  };
}

// The limits of a listener that nodes or operators reach: headers within 15 s, an idle socket
// closed after 60 s, keep-alive 5 s, a request in all within `requestTimeoutMs` (0: none), and a
// malformed request answered 400 and closed.
export function limitConnections(server: http.Server, requestTimeoutMs: number): void {
  server.requestTimeout = requestTimeoutMs;
  server.headersTimeout = 15_000;
  server.keepAliveTimeout = 5_000;
  server.setTimeout(60_000, (socket) => socket.destroy());
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });
}
