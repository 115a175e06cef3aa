import type { AuthFailureReads, AuthFailureRow, AuthFailureWrites } from '../store.js';
import type { Query } from './query.js';

// The auth_failures table: recent failed authentications per source.
export function pgAuthFailures(q: Query): AuthFailureReads & AuthFailureWrites {
  return {
    async get(source, since) {
      return q.one<AuthFailureRow>('SELECT source, failures, "lastAt" FROM auth_failures WHERE source = $1 AND "lastAt" > $2', [source, since]);
    },
    async record(source, at, since) {
      // Why here: the table holds only sources with recent failures (as on SQLite).
      await q.count('DELETE FROM auth_failures WHERE "lastAt" <= $1 AND source <> $2', [since, source]);
      const r = await q.one<{ failures: number }>(
        `INSERT INTO auth_failures (source, failures, "lastAt") VALUES ($1, 1, $2)
         ON CONFLICT (source) DO UPDATE SET failures = CASE WHEN auth_failures."lastAt" <= $3 THEN 1 ELSE auth_failures.failures + 1 END, "lastAt" = excluded."lastAt"
         RETURNING failures`,
        [source, at, since],
      );
      return (r as { failures: number }).failures;
    },
  };
}
