import type { SignalReads, SignalSample, SignalWrites } from '../store.js';
import type { Prepare } from './prepare.js';

const COLUMNS = 'nodeId, app, minute, at, version, since, restarts, livenessFailures, watchdogKills, oomKills, cpuSeconds, rssBytes, requests, errors, scrape';

// The signal samples table (docs/design.md §19).
export function sqliteSignals(q: Prepare): SignalReads & SignalWrites {
  return {
    async window(app, nodeIds, from, to) {
      if (nodeIds.length === 0) return [];
      // Why json_each: a list of thousands of nodes would pass SQLite's limit on bound variables.
      return q(
        `SELECT ${COLUMNS} FROM signal_samples WHERE app = ? AND nodeId IN (SELECT value FROM json_each(?)) AND at >= ? AND at < ? ORDER BY nodeId, at`,
      ).all(app, JSON.stringify(nodeIds), from, to) as SignalSample[];
    },
    async record(samples) {
      const st = q(`INSERT INTO signal_samples (${COLUMNS}) VALUES (${COLUMNS.split(', ').map(() => '?').join(', ')}) ON CONFLICT (nodeId, app, minute) DO NOTHING`);
      for (const s of samples) {
        st.run(s.nodeId, s.app, s.minute, s.at, s.version, s.since, s.restarts, s.livenessFailures, s.watchdogKills, s.oomKills, s.cpuSeconds, s.rssBytes, s.requests, s.errors, s.scrape);
      }
    },
    async prune(before) {
      return q('DELETE FROM signal_samples WHERE at < ?').run(before).changes;
    },
  };
}
