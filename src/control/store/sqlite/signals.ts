import type { SignalReads, SignalSample, SignalWrites } from '../store.js';
import { storedSample } from '../signal-sample.js';
import type { Prepare } from './prepare.js';

const COLUMNS = 'nodeId, app, minute, at, version, since, restarts, livenessFailures, watchdogKills, oomKills, cpuMs, rssBytes, requests, errors, scrape';
const READ = 'nodeId, app, minute, at, version, since, restarts, livenessFailures, watchdogKills, oomKills, cpuMs / 1000.0 AS cpuSeconds, rssBytes, requests, errors, scrape';

// The signal samples table (docs/design.md §19).
export function sqliteSignals(q: Prepare): SignalReads & SignalWrites {
  return {
    async window(app, nodeIds, from, to) {
      if (nodeIds.length === 0) return [];
      // Why json_each: a list of thousands of nodes would pass SQLite's limit on bound variables.
      return q(
        `SELECT ${READ} FROM signal_samples WHERE app = ? AND nodeId IN (SELECT value FROM json_each(?)) AND at >= ? AND at < ? ORDER BY nodeId, at`,
      ).all(app, JSON.stringify(nodeIds), from, to) as SignalSample[];
    },
    async record(samples) {
      const st = q(`INSERT INTO signal_samples (${COLUMNS}) VALUES (${COLUMNS.split(', ').map(() => '?').join(', ')}) ON CONFLICT (nodeId, app, minute) DO NOTHING`);
      for (const s of samples) st.run(...storedSample(s));
    },
    async prune(before) {
      return q('DELETE FROM signal_samples WHERE at < ?').run(before).changes;
    },
  };
}
