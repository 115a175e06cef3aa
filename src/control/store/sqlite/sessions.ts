import type { SessionReads, SessionRow, SessionWrites } from '../store.js';
import type { Prepare } from './prepare.js';

// The sessions table (only each session secret's sha256 is stored).
export function sqliteSessions(q: Prepare): SessionReads & SessionWrites {
  return {
    async get(hash) {
      return (q('SELECT hash, operator, createdAt, lastSeenAt, expiresAt FROM sessions WHERE hash = ?').get(hash) as SessionRow | undefined) ?? null;
    },
    async countFor(operator, now, idleMs) {
      return (q('SELECT count(*) AS n FROM sessions WHERE operator = ? AND expiresAt > ? AND lastSeenAt > ?').get(operator, now, now - idleMs) as { n: number }).n;
    },
    async insert(s) {
      q('INSERT INTO sessions (hash, operator, createdAt, lastSeenAt, expiresAt) VALUES (?, ?, ?, ?, ?)').run(s.hash, s.operator, s.createdAt, s.lastSeenAt, s.expiresAt);
    },
    async touch(hash, at) {
      q('UPDATE sessions SET lastSeenAt = ? WHERE hash = ? AND lastSeenAt < ?').run(at, hash, at);
    },
    async remove(hash) {
      return q('DELETE FROM sessions WHERE hash = ?').run(hash).changes === 1;
    },
    async removeFor(operator) {
      return q('DELETE FROM sessions WHERE operator = ?').run(operator).changes;
    },
    async removeExpired(now, idleMs) {
      q('DELETE FROM sessions WHERE expiresAt <= ? OR lastSeenAt <= ?').run(now, now - idleMs);
    },
  };
}
