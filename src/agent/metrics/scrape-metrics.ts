// One scrape of an app's own Prometheus endpoint by the agent (docs/design.md §19): loopback only
// (127.0.0.1, [::1], or localhost taken as 127.0.0.1: nothing is resolved), no redirect followed,
// the body bounded in bytes and the whole exchange in time, the text read by prom-text.ts. Every
// failure is an outcome with a code (docs/reason-codes.md, "Scrape codes"), never a throw.
import http from 'node:http';
import { parseMetricSelector, type MetricSelector } from '../../core/metric-selector.js';
import { isMetricsUrl } from '../../core/release-schemas.js';
import { PromTextError, sumMatching } from './prom-text.js';

export const SCRAPE_MAX_BYTES = 4 * 1024 * 1024;
export const SCRAPE_TIMEOUT_MS = 2000;

export const SCRAPE_CODES = [
  'METRICS_URL_REFUSED',
  'METRICS_UNREACHABLE',
  'METRICS_TIMEOUT',
  'METRICS_TOO_LARGE',
  'METRICS_REDIRECT_REFUSED',
  'METRICS_HTTP_STATUS',
  'METRICS_UNPARSABLE',
  'METRICS_SERIES_ABSENT',
] as const;
export type ScrapeCode = (typeof SCRAPE_CODES)[number];

export interface MetricsSpec {
  url: string;
  requests: string;
  errors: string;
}

export type ScrapeOutcome =
  | { ok: true; requests: number; errors: number }
  | { ok: false; code: ScrapeCode; detail: string; requests?: number; errors?: number };

export interface ScrapeOptions {
  maxBytes?: number;
  timeoutMs?: number;
}

// Scrapes `spec.url` and sums its `requests` and `errors` series.
export async function scrapeMetrics(spec: MetricsSpec, o: ScrapeOptions = {}): Promise<ScrapeOutcome> {
  if (!isMetricsUrl(spec.url)) return { ok: false, code: 'METRICS_URL_REFUSED', detail: 'the metrics URL is not http on 127.0.0.1, [::1] or localhost with a port' };
  let selectors: MetricSelector[];
  try {
    selectors = [parseMetricSelector(spec.requests), parseMetricSelector(spec.errors)];
  } catch (err) {
    return { ok: false, code: 'METRICS_UNPARSABLE', detail: `a selector does not parse: ${(err as Error).message}` };
  }
  const got = await fetchBody(spec.url, o.maxBytes ?? SCRAPE_MAX_BYTES, o.timeoutMs ?? SCRAPE_TIMEOUT_MS);
  if (!got.ok) return got;
  let sums: (number | null)[];
  try {
    sums = sumMatching(got.body, selectors).sums;
  } catch (err) {
    if (err instanceof PromTextError) return { ok: false, code: 'METRICS_UNPARSABLE', detail: err.message.slice(0, 200) };
    throw err;
  }
  const [requests, errors] = sums as [number | null, number | null];
  if (requests === null || errors === null) {
    const missing = [requests === null ? selectors[0]?.name : null, errors === null ? selectors[1]?.name : null].filter(Boolean).join(', ');
    return { ok: false, code: 'METRICS_SERIES_ABSENT', detail: `no series or metadata names ${missing}`, ...(requests !== null ? { requests } : {}), ...(errors !== null ? { errors } : {}) };
  }
  return { ok: true, requests, errors };
}

type Fetched = { ok: true; body: string } | { ok: false; code: ScrapeCode; detail: string };

function fetchBody(url: string, maxBytes: number, timeoutMs: number): Promise<Fetched> {
  const u = new URL(url);
  // Why the literal address: a name would go to the resolver, which /etc/hosts or NSS could point off loopback.
  const host = u.hostname === '[::1]' ? '::1' : '127.0.0.1';
  return new Promise<Fetched>((resolve) => {
    let done = false;
    const finish = (r: Fetched) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      // Why destroy: a server that keeps sending (or never ends) must not hold the socket after the verdict.
      req.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => finish({ ok: false, code: 'METRICS_TIMEOUT', detail: `no complete answer within ${timeoutMs} ms` }), timeoutMs);
    const req = http.request(
      { host, port: Number(u.port), path: `${u.pathname}${u.search}`, method: 'GET', headers: { Host: u.host, Accept: 'text/plain;version=0.0.4', 'Accept-Encoding': 'identity' }, agent: false },
      (res) => {
        const status = res.statusCode ?? 0;
        if (status >= 300 && status < 400) return finish({ ok: false, code: 'METRICS_REDIRECT_REFUSED', detail: `answered ${status} (a redirect is never followed)` });
        if (status !== 200) return finish({ ok: false, code: 'METRICS_HTTP_STATUS', detail: `answered ${status}` });
        const enc = res.headers['content-encoding'];
        if (enc && enc !== 'identity') return finish({ ok: false, code: 'METRICS_UNPARSABLE', detail: `content-encoding ${String(enc).slice(0, 32)} was not asked for` });
        const declared = Number(res.headers['content-length']);
        if (Number.isFinite(declared) && declared > maxBytes) return finish({ ok: false, code: 'METRICS_TOO_LARGE', detail: `declares ${declared} bytes, more than ${maxBytes}` });
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > maxBytes) return finish({ ok: false, code: 'METRICS_TOO_LARGE', detail: `more than ${maxBytes} bytes` });
          chunks.push(c);
        });
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          finish(text.includes('\uFFFD') ? { ok: false, code: 'METRICS_UNPARSABLE', detail: 'the body is not UTF-8' } : { ok: true, body: text });
        });
        res.on('error', (err) => finish({ ok: false, code: 'METRICS_UNREACHABLE', detail: err.message }));
      },
    );
    req.on('error', (err) => finish({ ok: false, code: 'METRICS_UNREACHABLE', detail: (err as Error).message.slice(0, 200) }));
    req.end();
  });
}
