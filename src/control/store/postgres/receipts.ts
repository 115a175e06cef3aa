import type { Envelope } from '../../../core/release-schemas.js';
import { parseJson } from '../parse-json.js';
import type { ReceiptFact, ReceiptFilter, ReceiptKey, ReceiptReads, ReceiptRow, ReceiptWrites } from '../store.js';
import type { Param, Query } from './query.js';

const FACT_COLUMNS = 'r."nodeId", r.seq, r.app, r."attemptId", r.outcome, r."reasonCode", r."fromVersion", r."targetVersion", r."updatedAt", r."receivedAt", r.counts';

// Receipts in arrival order, of one node and/or app, after a key, at most `limit` (null: all).
async function selectReceipts(q: Query, filter: ReceiptFilter, after: ReceiptKey | null, limit: number | null): Promise<ReceiptRow[]> {
  const where: string[] = [];
  const args: Param[] = [];
  const arg = (v: Param) => `$${args.push(v)}`;
  if (filter.nodeId) where.push(`r."nodeId" = ${arg(filter.nodeId)}`);
  if (filter.app) where.push(`r.app = ${arg(filter.app)}`);
  if (after) where.push(`(r."receivedAt", r."nodeId", r.seq) > (${arg(after.receivedAt)}, ${arg(after.nodeId)}, ${arg(after.seq)})`);
  const sql = `SELECT ${FACT_COLUMNS}, r.envelope FROM receipts r ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY r."receivedAt", r."nodeId", r.seq${limit !== null ? ` LIMIT ${arg(limit)}` : ''}`;
  const rows = await q.rows<ReceiptFact & { envelope: string }>(sql, args);
  return rows.map((r): ReceiptRow => ({ ...r, envelope: parseJson<Envelope>(r.envelope, { payload: '', sig: '', keyId: '' }) }));
}

// The receipts table.
export function pgReceipts(q: Query): ReceiptReads & ReceiptWrites {
  return {
    async envelope(nodeId, seq) {
      const row = await q.one<{ envelope: string }>('SELECT envelope FROM receipts WHERE "nodeId" = $1 AND seq = $2', [nodeId, seq]);
      return row ? parseJson<Envelope | null>(row.envelope, null) : null;
    },
    list: (filter = {}) => selectReceipts(q, filter, null, null),
    page: (filter, after, limit) => selectReceipts(q, filter, after, limit),
    countingForRun(runId) {
      return q.rows<ReceiptFact>(
        `SELECT ${FACT_COLUMNS} FROM issued i JOIN receipts r ON r."attemptId" = i."attemptId" AND r."nodeId" = i."nodeId" WHERE i."runId" = $1 AND r.counts ORDER BY r."nodeId", r.seq`,
        [runId],
      );
    },
    revertsForRun(runId, app) {
      return q.rows<ReceiptFact>(
        `SELECT ${FACT_COLUMNS} FROM run_nodes rn JOIN receipts r ON r."nodeId" = rn."nodeId" WHERE rn."runId" = $1 AND r.app = $2 AND r.outcome IN ('rolled-back', 'failed') ORDER BY r."nodeId", r.seq`,
        [runId, app],
      );
    },
    revertsOfApp(app) {
      return q.rows<ReceiptFact>(`SELECT ${FACT_COLUMNS} FROM receipts r WHERE r.app = $1 AND r.outcome IN ('rolled-back', 'failed') ORDER BY r."nodeId", r.seq`, [app]);
    },
    async gaps(nodeId) {
      const seqs = (await q.rows<{ seq: number }>('SELECT seq FROM receipts WHERE "nodeId" = $1 ORDER BY seq', [nodeId])).map((r) => r.seq);
      const gaps: number[] = [];
      for (let i = 1; i < seqs.length; i++) {
        // A cap keeps a node claiming seq 2^50 from filling memory.
        for (let s = (seqs[i - 1] as number) + 1; s < (seqs[i] as number) && gaps.length < 1000; s++) gaps.push(s);
      }
      return gaps;
    },
    async insert(nodeId, r, receivedAt) {
      const p = r.payload;
      await q.guarded(() =>
        q.count(
          `INSERT INTO receipts ("nodeId", seq, app, "attemptId", outcome, "reasonCode", "fromVersion", "targetVersion", "updatedAt", "receivedAt", counts, envelope)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
          [nodeId, p.seq, p.app, p.attemptId, p.outcome, p.reason?.code ?? null, p.fromVersion, p.targetVersion, p.updatedAt, receivedAt, r.counts, JSON.stringify(r.envelope)],
        ),
      );
    },
  };
}
