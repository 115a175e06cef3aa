import type { AuditReads, AuditRow, AuditWrites } from '../store.js';
import { parseJson, type Prepare } from './prepare.js';

type Raw = Omit<AuditRow, 'details'> & { details: string };

// The audit table: one row per change, login and denial, in the order recorded.
export function sqliteAudit(q: Prepare): AuditReads & AuditWrites {
  return {
    async page(since, afterId, limit) {
      const rows = q('SELECT id, at, operator, action, target, source, details FROM audit WHERE id > ? AND at >= ? ORDER BY id LIMIT ?').all(afterId, since, limit) as Raw[];
      return rows.map((r) => {
        const details = parseJson<unknown>(r.details, {});
        return { ...r, details: details !== null && typeof details === 'object' && !Array.isArray(details) ? (details as Record<string, unknown>) : {} };
      });
    },
    async insert(e) {
      q('INSERT INTO audit (at, operator, action, target, source, details) VALUES (?, ?, ?, ?, ?, ?)').run(e.at, e.operator, e.action, e.target, e.source, JSON.stringify(e.details));
    },
  };
}
