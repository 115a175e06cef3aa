// What `serve --metrics-listen` adds (DESIGN §12): the registry, the store timed for it, and
// the metrics listener. serve.ts imports this file only when the flag is given, so a control
// plane without metrics never loads prom-client.
import type { ControlStore } from '../store/store.js';
import { createControlMetrics, type ControlMetricsOptions } from './control-metrics.js';
import { startMetricsServer } from './metrics-server.js';
import type { HeartbeatMetrics } from './observe-heartbeats.js';

export interface ServeMetrics {
  url: string;
  // For startControlServer: the store to serve from (its commits timed) and the heartbeat hooks.
  store: ControlStore;
  heartbeats: HeartbeatMetrics;
  // Stops the metrics listener. Idempotent.
  close(): Promise<void>;
}

// Starts the metrics listener on `listen` for `store`.
export async function startServeMetrics(store: ControlStore, listen: { host: string; port: number }, opts: Omit<ControlMetricsOptions, 'store'> = {}): Promise<ServeMetrics> {
  const metrics = createControlMetrics({ ...opts, store });
  const server = await startMetricsServer({ host: listen.host, port: listen.port, registry: metrics.registry, store });
  return { url: server.url, store: metrics.timeStore(store), heartbeats: metrics.heartbeats, close: server.close };
}
