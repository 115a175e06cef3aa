import type { SignalReads, SignalSample, SignalWrites } from '../store.js';
import type { Query } from './query.js';

const NAMES = ['nodeId', 'app', 'minute', 'at', 'version', 'since', 'restarts', 'livenessFailures', 'watchdogKills', 'oomKills', 'cpuSeconds', 'rssBytes', 'requests', 'errors', 'scrape'] as const;
const COLUMNS = NAMES.map((n) => `"${n}"`).join(', ');

// The signal samples table (docs/design.md §19).
export function pgSignals(q: Query): SignalReads & SignalWrites {
  return {
    async window(app, nodeIds, from, to) {
      if (nodeIds.length === 0) return [];
      return q.rows<SignalSample>(
        `SELECT ${COLUMNS} FROM signal_samples WHERE app = $1 AND "nodeId" = ANY($2::text[]) AND at >= $3 AND at < $4 ORDER BY "nodeId", at`,
        [app, nodeIds, from, to],
      );
    },
    async record(samples) {
      if (samples.length === 0) return;
      // One statement for the batch: a row per sample through unnest of one array per column.
      const arrays = NAMES.map((n) => samples.map((s) => s[n]));
      const types = ['text', 'text', 'bigint', 'bigint', 'text', 'bigint', 'float8', 'float8', 'float8', 'float8', 'float8', 'float8', 'float8', 'float8', 'text'];
      await q.count(
        `INSERT INTO signal_samples (${COLUMNS}) SELECT * FROM unnest(${types.map((t, i) => `$${i + 1}::${t}[]`).join(', ')})
         ON CONFLICT ("nodeId", app, minute) DO NOTHING`,
        arrays,
      );
    },
    async prune(before) {
      return q.count('DELETE FROM signal_samples WHERE at < $1', [before]);
    },
  };
}
