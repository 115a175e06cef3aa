import type { SignalReads, SignalSample, SignalWrites } from '../store.js';
import { storedSample } from '../signal-sample.js';
import type { Query } from './query.js';

const NAMES = ['nodeId', 'app', 'minute', 'at', 'version', 'since', 'restarts', 'livenessFailures', 'watchdogKills', 'oomKills', 'cpuMs', 'rssBytes', 'requests', 'errors', 'scrape'];
const COLUMNS = NAMES.map((n) => `"${n}"`).join(', ');
const READ = COLUMNS.replace('"cpuMs"', '"cpuMs" / 1000.0::float8 AS "cpuSeconds"');
const TYPES = ['text', 'text', 'int8', 'int8', 'text', 'int8', 'int8', 'int8', 'int8', 'int8', 'int8', 'int8', 'int8', 'int8', 'text'];

// The signal samples table (docs/design.md §19).
export function pgSignals(q: Query): SignalReads & SignalWrites {
  return {
    async window(app, nodeIds, from, to) {
      if (nodeIds.length === 0) return [];
      return q.rows<SignalSample>(
        `SELECT ${READ} FROM signal_samples WHERE app = $1 AND "nodeId" = ANY($2::text[]) AND at >= $3 AND at < $4 ORDER BY "nodeId", at`,
        [app, nodeIds, from, to],
      );
    },
    async record(samples) {
      if (samples.length === 0) return;
      // One statement for the batch: a row per sample through unnest of one array per column.
      const rows = samples.map(storedSample);
      const arrays = NAMES.map((_, i) => rows.map((r) => r[i] as string | number | null));
      await q.count(
        `INSERT INTO signal_samples (${COLUMNS}) SELECT * FROM unnest(${TYPES.map((t, i) => `$${i + 1}::${t}[]`).join(', ')})
         ON CONFLICT ("nodeId", app, minute) DO NOTHING`,
        arrays,
      );
    },
    async prune(before) {
      return q.count('DELETE FROM signal_samples WHERE at < $1', [before]);
    },
  };
}
