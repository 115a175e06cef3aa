import type { SessionReads, SessionRow, SessionWrites } from '../store.js';
import type { Query } from './query.js';

// The sessions table (only each session secret's sha256 is stored).
export function pgSessions(q: Query): SessionReads & SessionWrites {
  return {
    async get(hash) {
      return q.one<SessionRow>('SELECT hash, operator, "createdAt", "lastSeenAt", "expiresAt" FROM sessions WHERE hash = $1', [hash]);
    },
    async countFor(operator, now, idleMs) {
      return ((await q.one<{ n: number }>('SELECT count(*) AS n FROM sessions WHERE operator = $1 AND "expiresAt" > $2 AND "lastSeenAt" > $3', [operator, now, now - idleMs])) as { n: number }).n;
    },
    async insert(s) {
      await q.guarded(() => q.count('INSERT INTO sessions (hash, operator, "createdAt", "lastSeenAt", "expiresAt") VALUES ($1, $2, $3, $4, $5)', [s.hash, s.operator, s.createdAt, s.lastSeenAt, s.expiresAt]));
    },
    async touch(hash, at) {
      await q.count('UPDATE sessions SET "lastSeenAt" = $1 WHERE hash = $2 AND "lastSeenAt" < $1', [at, hash]);
    },
    async remove(hash) {
      return (await q.count('DELETE FROM sessions WHERE hash = $1', [hash])) === 1;
    },
    async removeFor(operator) {
      return q.count('DELETE FROM sessions WHERE operator = $1', [operator]);
    },
    async removeExpired(now, idleMs) {
      await q.count('DELETE FROM sessions WHERE "expiresAt" <= $1 OR "lastSeenAt" <= $2', [now, now - idleMs]);
    },
  };
}
