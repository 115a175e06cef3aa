// The control plane's Prometheus metrics (docs/design.md §12), with prom-client: this instance's
// counters and histograms, fed by the heartbeat path and the store at the cost of a counter
// increment, and the fleet-wide gauges, read from the store at scrape time (fleet-snapshot.ts).
// Every label value is bounded (label-values.ts). docs/metrics.md lists every metric.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ReceiptPayload } from '../../core/receipt-schema.js';
import type { ControlStore } from '../store/store.js';
import { cachedFleetSnapshots, RUN_STATUSES } from './fleet-snapshot.js';
import { heartbeatResultLabel, outcomeLabel, reasonLabel } from './label-values.js';
import type { HeartbeatMetrics } from './observe-heartbeats.js';

export const METRIC_PREFIX = 'steward_control_';
// How long one read of the fleet's gauges serves scrapes.
export const FLEET_CACHE_MS = 5_000;

// Sub-millisecond to seconds: a heartbeat's answer takes about a millisecond on a quiet store,
// a commit less; a slow disk shows in the upper buckets.
const HEARTBEAT_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const STORE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

export interface ControlMetricsOptions {
  // The store the fleet's gauges are read from.
  store: ControlStore;
  cacheMs?: number;
  // Monotonic milliseconds, for the cache (default performance.now).
  now?: () => number;
  // Node's process metrics (process_*, nodejs_*), default true. Off in tests that make several
  // registries in one process, where they would be the same process measured twice.
  processMetrics?: boolean;
}

export interface ControlMetrics {
  registry: Registry;
  // For the heartbeat path (control-server.ts).
  heartbeats: HeartbeatMetrics;
  // `store` with the time of each write transaction and each wait for durability observed.
  timeStore(store: ControlStore): ControlStore;
}

// Makes the registry of one control-plane instance.
export function createControlMetrics(opts: ControlMetricsOptions): ControlMetrics {
  const registry = new Registry();
  const p = METRIC_PREFIX;
  if (opts.processMetrics ?? true) {
    collectDefaultMetrics({ register: registry });
    // Why: prom-client names these three gauges `_total`, which Prometheus keeps for counters
    // (promtool refuses them); each is the sum of its by-type gauge, which stays.
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) registry.removeSingleMetric(name);
  }

  const heartbeatsTotal = new Counter({ name: `${p}heartbeats_total`, help: 'Heartbeats answered by this instance, by result: ok, or the error code of the answer.', labelNames: ['result'], registers: [registry] });
  const heartbeatSeconds = new Histogram({ name: `${p}heartbeat_duration_seconds`, help: "Seconds from a heartbeat's whole body read to its answer (verification, group commit and fsync), on this instance.", buckets: HEARTBEAT_BUCKETS, registers: [registry] });
  const receiptsTotal = new Counter({ name: `${p}receipts_total`, help: 'Receipts stored by this instance as received from nodes, by outcome and reason code (none: no reason; other: not a steward reason code).', labelNames: ['outcome', 'reason'], registers: [registry] });
  const commitSeconds = new Histogram({ name: `${p}store_commit_duration_seconds`, help: "Seconds one write transaction of this instance took, from its call to its commit's return (waiting for the one before included).", buckets: STORE_BUCKETS, registers: [registry] });
  const syncSeconds = new Histogram({ name: `${p}store_sync_duration_seconds`, help: 'Seconds this instance waited for earlier commits to be on disk before answering.', buckets: STORE_BUCKETS, registers: [registry] });

  // Children bound once per label value: an increment is then a field update, no label hashing.
  const results = new Map<string, Counter.Internal>();
  const resultChild = (code: string | null) => {
    const label = heartbeatResultLabel(code);
    let c = results.get(label);
    if (!c) results.set(label, (c = heartbeatsTotal.labels(label)));
    return c;
  };
  // The ok series is there from the start (a rate over a series that appears later misses its first increase).
  resultChild(null).inc(0);

  // Its collect waits for this scrape's read, so that a failure shows in the same scrape.
  const fleetErrors = new Counter({
    name: `${p}fleet_read_errors_total`,
    help: 'Reads of the fleet gauges that failed: the scrapes served meanwhile left them out.',
    registers: [registry],
    async collect() {
      await snapshots.get();
    },
  });
  const snapshots = cachedFleetSnapshots(opts.store, { cacheMs: opts.cacheMs ?? FLEET_CACHE_MS, now: opts.now ?? (() => performance.now()), onError: () => fleetErrors.inc() });
  // One gauge per fleet fact; each scrape sets it from the (cached) snapshot, or leaves it
  // empty when the store did not answer.
  const fleetGauge = (name: string, help: string, labelNames: string[], fill: (g: Gauge, s: NonNullable<Awaited<ReturnType<typeof snapshots.get>>>) => void, fullName?: string) =>
    new Gauge({
      name: fullName ?? `${p}${name}`,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        const s = await snapshots.get();
        this.reset();
        if (s) fill(this, s);
      },
    });
  fleetGauge('nodes', 'Enrolled nodes by freshness: fresh (a heartbeat within 3 intervals), stale, never (no heartbeat yet). From the store.', ['freshness'], (g, s) => {
    for (const [freshness, n] of Object.entries(s.nodes)) g.set({ freshness }, n);
  });
  fleetGauge('clock_skew_refused_nodes', 'Enrolled nodes whose heartbeats are refused for clock skew (422 CLOCK_SKEW) since their last accepted one. From the store.', [], (g, s) => {
    g.set(s.clockSkewRefused);
  });
  // Named as docs/design.md §21.2 names it, outside the steward_control_ prefix.
  fleetGauge('', "Nodes that trust releases by TUF whose newest timestamp is over two re-sign periods (2 h) old, or that have none, while the fleet has a TUF repository: metadata-stale. From the store.", [], (g, s) => {
    g.set(s.metadataStale);
  }, 'steward_nodes_metadata_stale');
  fleetGauge('app_version_nodes', "Nodes whose latest heartbeat reports the app at the version (none: not installed). The top apps and versions by nodes; the rest summed as app _other and version other. From the store.", ['app', 'version'], (g, s) => {
    for (const r of s.appVersions) g.set({ app: r.app, version: r.version ?? 'none' }, r.nodes);
  });
  fleetGauge('runs', 'Rollout runs by stored status. From the store.', ['status'], (g, s) => {
    for (const status of RUN_STATUSES) g.set({ status }, s.runs[status]);
  });
  fleetGauge('run_nodes', "Nodes of each app's rollout run that has not ended, by their state in the run. From the store.", ['app', 'state'], (g, s) => {
    for (const r of s.runNodes) for (const [state, n] of Object.entries(r.states)) g.set({ app: r.app, state }, n);
  });
  fleetGauge('target_nodes', 'Nodes each target selects, by state: current (they run its version) or behind. From the store.', ['target', 'state'], (g, s) => {
    for (const t of s.targets) for (const [state, n] of Object.entries(t.states)) g.set({ target: t.target, state }, n);
  });
  fleetGauge('target_behind', "Nodes each target selects that do not run its version, by their one reason (held, pinned, offline, waiting-batch, ...). From the store.", ['target', 'reason'], (g, s) => {
    for (const t of s.targets) for (const [reason, n] of Object.entries(t.behind)) g.set({ target: t.target, reason }, n);
  });

  return {
    registry,
    heartbeats: {
      heartbeatAnswered(code, seconds) {
        resultChild(code).inc();
        if (seconds !== null) heartbeatSeconds.observe(seconds);
      },
      receiptsStored(receipts: readonly ReceiptPayload[]) {
        for (const r of receipts) receiptsTotal.inc({ outcome: outcomeLabel(r.outcome), reason: reasonLabel(r.reason?.code) });
      },
    },
    timeStore: (store) => timedStore(store, (s) => commitSeconds.observe(s), (s) => syncSeconds.observe(s)),
  };
}

// `store` with its writes and durability waits timed (those that succeed: a failed one is no
// commit); everything else passes through.
function timedStore(store: ControlStore, onCommit: (seconds: number) => void, onSync: (seconds: number) => void): ControlStore {
  const timed = async <T>(p: () => Promise<T>, observe: (s: number) => void): Promise<T> => {
    const start = performance.now();
    const r = await p();
    observe((performance.now() - start) / 1000);
    return r;
  };
  return {
    location: store.location,
    write: (fn) => timed(() => store.write(fn), onCommit),
    read: (fn) => store.read(fn),
    durable: () => timed(() => store.durable(), onSync),
    onRolloutWake: (listener) => store.onRolloutWake(listener),
    onNodeWake: (listener) => store.onNodeWake(listener),
    close: () => store.close(),
  };
}
