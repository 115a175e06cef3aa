// The `--metrics-listen` listener (docs/design.md §12): `GET /metrics` in Prometheus' text format,
// `/healthz` and `/readyz` (probes.ts). Plain http, no authentication: what it shows (counts,
// app names, versions, codes) is bounded and holds no secret, and it is for a scraper on a
// private network; bind it to loopback or such an address.
import http from 'node:http';
import type { Registry } from 'prom-client';
import { logger } from '../../platform/log.js';
import { listen } from '../server/listen.js';
import type { ControlStore } from '../store/store.js';
import { answerProbe, isProbePath, METRICS_PATH, sendText } from './probes.js';

const log = logger('control:metrics');

export interface MetricsServerOptions {
  host: string;
  port: number;
  registry: Registry;
  // What readyz asks.
  store: Pick<ControlStore, 'read'>;
  readyTimeoutMs?: number;
}

export interface MetricsServer {
  url: string;
  // Stops the listener and drops idle connections. Idempotent.
  close(): Promise<void>;
}

// Starts the listener and resolves once it listens.
export async function startMetricsServer(opts: MetricsServerOptions): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    serve(opts, req, res).catch((err: unknown) => {
      log('request %s %s failed: %s', req.method, req.url, (err as Error)?.stack ?? String(err));
      sendText(res, req, 500, 'internal error; see the server log\n');
    });
  });
  // A scraper's request is small and quick; a stalled client holds nothing for long.
  server.requestTimeout = 30_000;
  server.headersTimeout = 15_000;
  server.keepAliveTimeout = 5_000;
  const { url, close } = await listen(server, opts.host, opts.port, false);
  return { url, close: () => close() };
}

// Why nothing else: this listener has no authentication and no TLS, so it serves no fleet route
// (enroll, heartbeat, artifacts) and nothing of an operator's.
async function serve(opts: MetricsServerOptions, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const pathOnly = (req.url ?? '/').split('?')[0] ?? '/';
  if (isProbePath(pathOnly)) return answerProbe(pathOnly, opts.store, req, res, opts.readyTimeoutMs);
  if (pathOnly !== METRICS_PATH) return sendText(res, req, 404, `no such path; metrics are at ${METRICS_PATH}\n`);
  return answerMetrics(opts.registry, req, res);
}

// Answers a request for METRICS_PATH with the text of `registry` (the fleet listener too, when
// --metrics-listen names its address).
export async function answerMetrics(registry: Registry, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') return sendText(res, req, 405, `${METRICS_PATH} takes GET\n`, { allow: 'GET, HEAD' });
  return sendText(res, req, 200, await registry.metrics(), {}, registry.contentType);
}
