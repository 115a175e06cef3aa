import type { AuthFailureReads, AuthFailureRow, AuthFailureWrites } from '../store.js';
import type { Prepare } from './prepare.js';

// The auth_failures table: recent failed authentications per source.
export function sqliteAuthFailures(q: Prepare): AuthFailureReads & AuthFailureWrites {
  return {
    async get(source, since) {
      return (q('SELECT source, failures, lastAt FROM auth_failures WHERE source = ? AND lastAt > ?').get(source, since) as AuthFailureRow | undefined) ?? null;
    },
    async record(source, at, since) {
      // Why here: the table holds only sources with recent failures, so a flood from many
      // addresses costs rows for the window's length, not for ever.
      q('DELETE FROM auth_failures WHERE lastAt <= ? AND source <> ?').run(since, source);
      const r = q(
        `INSERT INTO auth_failures (source, failures, lastAt) VALUES (?, 1, ?)
         ON CONFLICT(source) DO UPDATE SET failures = CASE WHEN lastAt <= ? THEN 1 ELSE failures + 1 END, lastAt = excluded.lastAt
         RETURNING failures`,
      ).get(source, at, since) as { failures: number };
      return r.failures;
    },
  };
}
