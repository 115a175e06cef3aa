// An app's `signals` as a heartbeat v7 carries them (docs/design.md §19; the wire shape in docs/protocol.md),
// checked again with the heartbeat's own schema before they are stored (they come from a node, and a
// caller may hand an app report that never went through the heartbeat's check): what does not fit is
// no data, never a zero.
import { signalsSchema, type AppSignals } from '../../core/heartbeat-schema.js';

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
