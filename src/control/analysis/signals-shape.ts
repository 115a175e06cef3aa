// An app's `signals` as a heartbeat v7 carries them (docs/protocol.md, "Signals"; docs/design.md §19),
// checked again here as any bytes from a node: the heartbeat schema of this steward-control may
// not know the field yet (it is parsed from the app's report as it was stored), and a value that
// does not fit is no data, never a zero.
import * as z from '../../core/zod-mini.js';

// Counters stay below 2^53 so that sums and differences are exact; a node sending more sends noise.
const MAX_COUNT = Number.MAX_SAFE_INTEGER;
const count = z.number().check(z.minimum(0), z.maximum(MAX_COUNT));
const integer = z.number().check(z.int(), z.minimum(0), z.maximum(MAX_COUNT));
const isoTime = z.string().check(z.maxLength(40), z.regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/));
const reasonCode = z.string().check(z.regex(/^[A-Z][A-Z0-9_]{0,63}$/));

export const signalsSchema = z.object({
  since: isoTime,
  restarts: integer,
  livenessFailures: integer,
  watchdogKills: integer,
  oomKills: integer,
  cpuSeconds: count,
  rssBytes: count,
  requests: z.optional(count),
  errors: z.optional(count),
  scrape: z.optional(z.object({ ok: z.boolean(), code: z.optional(reasonCode), at: isoTime })),
});

export type AppSignals = z.infer<typeof signalsSchema>;

// What one app report says of its signals, as numbers: `since` in epoch ms, and the scrape as
// null (no metrics in the manifest), 'ok' or its reason code. Null when it has none or they do
// not fit the shape.
export interface ParsedSignals extends Omit<AppSignals, 'since' | 'scrape' | 'requests' | 'errors'> {
  since: number;
  requests: number | null;
  errors: number | null;
  scrape: string | null;
}

export function parseAppSignals(app: unknown): ParsedSignals | null {
  if (typeof app !== 'object' || app === null || !('signals' in app)) return null;
  const r = signalsSchema.safeParse((app as { signals: unknown }).signals);
  if (!r.success) return null;
  const since = Date.parse(r.data.since);
  if (!Number.isSafeInteger(since) || since < 0) return null;
  const s = r.data;
  const scrape = s.scrape === undefined ? null : s.scrape.ok ? 'ok' : (s.scrape.code ?? 'failed');
  // Why both or neither: an error count without its requests is no ratio.
  const paired = s.requests !== undefined && s.errors !== undefined;
  return {
    since, restarts: s.restarts, livenessFailures: s.livenessFailures, watchdogKills: s.watchdogKills, oomKills: s.oomKills,
    cpuSeconds: s.cpuSeconds, rssBytes: s.rssBytes, requests: paired ? s.requests! : null, errors: paired ? s.errors! : null, scrape,
  };
}
