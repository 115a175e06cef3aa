// What `serve --metrics-listen` adds (docs/design.md §12): the registry, the store timed for it, and
// the metrics listener. serve.ts imports this file only when the flag is given, so a control
// plane without metrics never loads prom-client.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ControlStore } from '../store/store.js';
import { createControlMetrics, type ControlMetricsOptions } from './control-metrics.js';
import { answerMetrics, startMetricsServer } from './metrics-server.js';
import type { HeartbeatMetrics } from './observe-heartbeats.js';

export interface ServeMetrics {
  // The metrics listener's URL, or null when it has none (the fleet listener serves /metrics).
  url: string | null;
  // For startControlServer: the store to serve from (its commits timed) and the heartbeat hooks.
  store: ControlStore;
  heartbeats: HeartbeatMetrics;
  // Answers GET /metrics (for the fleet listener when it serves them).
  answerMetrics(req: IncomingMessage, res: ServerResponse): Promise<void>;
  // Stops the metrics listener. Idempotent.
  close(): Promise<void>;
}

// The metrics of `store`, served on a listener of their own on `listen`, or on none (null: the
// fleet listener is to serve them, as when --metrics-listen names the --listen address).
export async function startServeMetrics(store: ControlStore, listen: { host: string; port: number } | null, opts: Omit<ControlMetricsOptions, 'store'> = {}): Promise<ServeMetrics> {
  const metrics = createControlMetrics({ ...opts, store });
  const server = listen ? await startMetricsServer({ host: listen.host, port: listen.port, registry: metrics.registry, store }) : null;
  return {
    url: server?.url ?? null,
    store: metrics.timeStore(store),
    heartbeats: metrics.heartbeats,
    answerMetrics: (req, res) => answerMetrics(metrics.registry, req, res),
    close: async () => server?.close(),
  };
}
