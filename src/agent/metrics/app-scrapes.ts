// The agent's scrapes of its apps' own metrics (docs/design.md §19): at most one per app per
// heartbeat interval (a heartbeat woken early reuses the last), all apps at once, each bounded by
// scrape-metrics.ts. What a heartbeat's `signals` carries of them: the counters of the last
// scrape that read them and that scrape's outcome.
import type { AppStatus } from '../../protocol/answers.js';
import { scrapeMetrics, type MetricsSpec, type ScrapeOutcome } from './scrape-metrics.js';

export interface ScrapedSignals {
  requests?: number;
  errors?: number;
  scrape: { ok: boolean; code?: string; at: string };
}

export interface AppScrapesDeps {
  now: () => number;
  // The seam to the endpoint (tests pass a plain function).
  scrape?: (spec: MetricsSpec) => Promise<ScrapeOutcome>;
}

interface Last {
  key: string;
  at: number;
  signals: ScrapedSignals;
}

export class AppScrapes {
  private readonly last = new Map<string, Last>();

  constructor(private readonly d: AppScrapesDeps) {}

  // Scrapes every app of `apps` whose status names a metrics block and whose last scrape is older than
  // `intervalMs`; answers each such app's signals. Never throws.
  async collect(apps: readonly AppStatus[], intervalMs: number): Promise<Map<string, ScrapedSignals>> {
    const out = new Map<string, ScrapedSignals>();
    const now = this.d.now();
    const seen = new Set<string>();
    await Promise.all(
      apps.map(async (a) => {
        const spec = a.signals?.metrics;
        if (!spec) return;
        seen.add(a.name);
        const key = `${spec.url}\0${spec.requests}\0${spec.errors}`;
        const before = this.last.get(a.name);
        // Why 0.9: a heartbeat a little early (jitter) still scrapes once per interval.
        if (before && before.key === key && now - before.at < intervalMs * 0.9) {
          out.set(a.name, before.signals);
          return;
        }
        const r = await (this.d.scrape ?? scrapeMetrics)(spec).catch((err: unknown): ScrapeOutcome => ({ ok: false, code: 'METRICS_UNREACHABLE', detail: String(err) }));
        const at = new Date(this.d.now()).toISOString();
        const signals: ScrapedSignals = {
          ...(r.requests !== undefined ? { requests: r.requests } : {}),
          ...(r.errors !== undefined ? { errors: r.errors } : {}),
          scrape: r.ok ? { ok: true, at } : { ok: false, code: r.code, at },
        };
        this.last.set(a.name, { key, at: now, signals });
        out.set(a.name, signals);
      }),
    );
    for (const name of [...this.last.keys()]) if (!seen.has(name)) this.last.delete(name);
    return out;
  }
}
