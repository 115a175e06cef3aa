// Simulated signal samples for the analysis' tests and bench (docs/design.md §19): nodes whose
// counters grow by Poisson noise around a rate, one sample a minute, as record-signals.ts keeps
// them. Seeded (prng.ts), so a failing case names its seed.
import type { SignalSample } from '../../src/control/store/store.js';

export interface NodeBehaviour {
  // Restarts and failed liveness probes per hour.
  restartsPerHour: number;
  livenessPerHour: number;
  // Requests per minute (null: the app exposes no request counters), and the share that fail.
  requestsPerMinute: number | null;
  errorRatio: number;
}

export interface SimulatedNode {
  nodeId: string;
  app?: string;
  version: string;
  behaviour: NodeBehaviour;
  // When the app's counters begin (its `since`); its counters before `from` are already this high.
  since?: number;
  // How busy this node is against the others (its requests are scaled by it); default 1.
  load?: number;
}

// A Poisson draw of mean `mean`: Knuth's product for small means, a rounded normal beyond.
export function poisson(rand: () => number, mean: number): number {
  if (mean <= 0) return 0;
  if (mean > 40) {
    const u = Math.max(rand(), 1e-12);
    const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
    return Math.max(0, Math.round(mean + Math.sqrt(mean) * z));
  }
  const limit = Math.exp(-mean);
  let k = 0;
  for (let p = rand(); p > limit; p *= rand()) k++;
  return k;
}

// A node's load factor: spread as real fleets are (some hosts take several times the traffic of others).
export function loadFactor(rand: () => number): number {
  return Math.exp((rand() - 0.5) * 1.4);
}

// One sample a minute for `minutes` minutes from `from` (each 30 s into its minute, so all lie in
// [from, from + minutes)), the counters growing by Poisson noise around the node's rates.
export function simulateSamples(rand: () => number, node: SimulatedNode, from: number, minutes: number): SignalSample[] {
  const b = node.behaviour;
  const load = node.load ?? 1;
  const since = node.since ?? from - 3_600_000;
  const c = { restarts: poisson(rand, 2), liveness: poisson(rand, 2), requests: b.requestsPerMinute === null ? 0 : 10_000 + Math.round(rand() * 1000), errors: 5 };
  const out: SignalSample[] = [];
  for (let i = 0; i < minutes; i++) {
    if (i > 0) {
      c.restarts += poisson(rand, b.restartsPerHour / 60);
      c.liveness += poisson(rand, b.livenessPerHour / 60);
      if (b.requestsPerMinute !== null) {
        const req = poisson(rand, b.requestsPerMinute * load);
        c.requests += req;
        c.errors += poisson(rand, req * b.errorRatio);
      }
    }
    const at = from + i * 60_000 + 30_000;
    out.push({
      nodeId: node.nodeId, app: node.app ?? 'web', minute: at - (at % 60_000), at, version: node.version, since,
      restarts: c.restarts, livenessFailures: c.liveness, watchdogKills: 0, oomKills: 0, cpuSeconds: i * 0.5, rssBytes: 50e6,
      requests: b.requestsPerMinute === null ? null : c.requests, errors: b.requestsPerMinute === null ? null : c.errors,
      scrape: b.requestsPerMinute === null ? null : 'ok',
    });
  }
  return out;
}
