// The --admin-listen listener (DESIGN §12), apart from the fleet's: it answers the admin
// router's paths only. An upload may take a while, so a request has no total deadline here (the
// fleet listener's is 30 s); headers must still come within 15 s and an idle socket closes
// after 60 s.
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { logger } from '../../platform/log.js';
import { sendAdminError } from './admin-answers.js';
import type { AdminRouter } from './router.js';

const log = logger('control:admin');

export interface AdminServer {
  url: string;
  // Stops listening and drops idle connections. Idempotent.
  close(): Promise<void>;
}

export async function startAdminServer(o: { router: AdminRouter; host: string; port: number; tls?: { cert: string | Buffer; key: string | Buffer } }): Promise<AdminServer> {
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    o.router
      .handle(req, res)
      .then((handled) => {
        if (!handled) sendAdminError(res, 'NOT_FOUND', `no such path ${JSON.stringify((req.url ?? '/').split('?')[0]?.slice(0, 200))} on the admin listener (the fleet's paths are on --listen)`, { connection: 'close' });
      })
      .catch((err: unknown) => {
        log('request %s %s failed: %s', req.method, req.url, (err as Error)?.stack ?? String(err));
        sendAdminError(res, 'INTERNAL', 'internal error; see the server log', { connection: 'close' });
      });
  };
  const server = o.tls ? https.createServer({ cert: o.tls.cert, key: o.tls.key }, handler) : http.createServer(handler);
  server.requestTimeout = 0;
  server.headersTimeout = 15_000;
  server.keepAliveTimeout = 5_000;
  server.setTimeout(60_000, (socket) => socket.destroy());
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' || addr.address.includes(':') ? `[${addr.address}]` : addr.address;
  let closed: Promise<void> | null = null;
  return {
    url: `${o.tls ? 'https' : 'http'}://${host}:${addr.port}`,
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      })),
  };
}
