// The --admin-listen listener (docs/design.md §12), apart from the fleet's: it answers the admin
// router's paths only. An upload may take a while, so a request has no total deadline here (the
// fleet listener's is 30 s); headers must still come within 15 s and an idle socket closes
// after 60 s.
import type http from 'node:http';
import { logger } from '../../platform/log.js';
import { limitConnections, listen } from '../server/listen.js';
import { createListenerServer, type ServeTls } from '../server/serve-tls.js';
import { sendAdminError } from './admin-answers.js';
import type { AdminRouter } from './router.js';

const log = logger('control:admin');

export interface AdminServer {
  url: string;
  // Stops listening and drops idle connections. Idempotent.
  close(): Promise<void>;
  // As ControlServer's: an https listener's new TLS (serve's SIGHUP); absent on plain http.
  reloadTls?(t: ServeTls): void;
}

export async function startAdminServer(o: { router: AdminRouter; host: string; port: number; tls?: ServeTls }): Promise<AdminServer> {
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
  const { server, reloadTls } = createListenerServer(o.tls, handler);
  limitConnections(server, 0);
  const { url, close } = await listen(server, o.host, o.port, !!o.tls);
  return { url, close: () => close(), ...(reloadTls ? { reloadTls } : {}) };
}
