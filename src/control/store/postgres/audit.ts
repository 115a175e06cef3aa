import { parseJson } from '../parse-json.js';
import type { AuditReads, AuditRow, AuditWrites } from '../store.js';
import type { Query } from './query.js';

type Raw = Omit<AuditRow, 'details'> & { details: string };

// The audit table: one row per change, login and denial, in the order recorded.
export function pgAudit(q: Query): AuditReads & AuditWrites {
  return {
    async page(since, afterId, limit) {
      const rows = await q.rows<Raw>('SELECT id, at, operator, action, target, source, details FROM audit WHERE id > $1 AND at >= $2 ORDER BY id LIMIT $3', [afterId, since, limit]);
      return rows.map((r) => {
        const details = parseJson<unknown>(r.details, {});
        return { ...r, details: details !== null && typeof details === 'object' && !Array.isArray(details) ? (details as Record<string, unknown>) : {} };
      });
    },
    async insert(e) {
      await q.count('INSERT INTO audit (at, operator, action, target, source, details) VALUES ($1, $2, $3, $4, $5, $6)', [e.at, e.operator, e.action, e.target, e.source, JSON.stringify(e.details)]);
    },
  };
}
