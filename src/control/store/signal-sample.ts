import type { SignalSample } from './store.js';

// A sample's values in the column order of signal_samples (both backends): integers only, CPU in
// milliseconds, every counter rounded, so that what a backup carries is what any other column holds.
export function storedSample(s: SignalSample): Array<string | number | null> {
  const n = (v: number) => Math.round(v);
  return [
    s.nodeId, s.app, s.minute, s.at, s.version, s.since, n(s.restarts), n(s.livenessFailures), n(s.watchdogKills), n(s.oomKills),
    Math.round(s.cpuSeconds * 1000), n(s.rssBytes), s.requests === null ? null : n(s.requests), s.errors === null ? null : n(s.errors), s.scrape,
  ];
}
