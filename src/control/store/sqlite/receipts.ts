import type { Envelope } from '../../../core/release-schemas.js';
import type { ReceiptFact, ReceiptFilter, ReceiptKey, ReceiptReads, ReceiptRow, ReceiptWrites } from '../store.js';
import { parseJson, type Prepare } from './prepare.js';

const FACT_COLUMNS = 'r.nodeId, r.seq, r.app, r.attemptId, r.outcome, r.reasonCode, r.fromVersion, r.targetVersion, r.updatedAt, r.receivedAt, r.counts';

type RawFact = Omit<ReceiptFact, 'counts'> & { counts: number };

const toFact = (r: RawFact): ReceiptFact => ({ ...r, counts: r.counts === 1 });

// Receipts in arrival order, of one node and/or app, after a key, at most `limit` (null: all).
function selectReceipts(q: Prepare, filter: ReceiptFilter, after: ReceiptKey | null, limit: number | null): ReceiptRow[] {
  const where: string[] = [];
  const args: Array<string | number> = [];
  if (filter.nodeId) (where.push('nodeId = ?'), args.push(filter.nodeId));
  if (filter.app) (where.push('app = ?'), args.push(filter.app));
  if (after) (where.push('(receivedAt, nodeId, seq) > (?, ?, ?)'), args.push(after.receivedAt, after.nodeId, after.seq));
  if (limit !== null) args.push(limit);
  const sql = `SELECT * FROM receipts r ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY receivedAt, nodeId, seq${limit !== null ? ' LIMIT ?' : ''}`;
  return (q(sql).all(...args) as Array<RawFact & { envelope: string }>).map((r): ReceiptRow => ({ ...toFact(r), envelope: parseJson<Envelope>(r.envelope, { payload: '', sig: '', keyId: '' }) }));
}

// The receipts table.
export function sqliteReceipts(q: Prepare): ReceiptReads & ReceiptWrites {
  return {
    async envelope(nodeId, seq) {
      const row = q('SELECT envelope FROM receipts WHERE nodeId = ? AND seq = ?').get(nodeId, seq) as { envelope: string } | undefined;
      return row ? parseJson<Envelope | null>(row.envelope, null) : null;
    },
    async list(filter = {}) {
      return selectReceipts(q, filter, null, null);
    },
    async page(filter, after, limit) {
      return selectReceipts(q, filter, after, limit);
    },
    async countingForRun(runId) {
      return (
        q(`SELECT ${FACT_COLUMNS} FROM issued i JOIN receipts r ON r.attemptId = i.attemptId AND r.nodeId = i.nodeId WHERE i.runId = ? AND r.counts = 1 ORDER BY r.nodeId, r.seq`).all(runId) as RawFact[]
      ).map(toFact);
    },
    async revertsForRun(runId, app) {
      return (
        q(`SELECT ${FACT_COLUMNS} FROM run_nodes rn JOIN receipts r ON r.nodeId = rn.nodeId WHERE rn.runId = ? AND r.app = ? AND r.outcome IN ('rolled-back', 'failed') ORDER BY r.nodeId, r.seq`).all(runId, app) as RawFact[]
      ).map(toFact);
    },
    async revertsOfApp(app) {
      return (q(`SELECT ${FACT_COLUMNS} FROM receipts r WHERE r.app = ? AND r.outcome IN ('rolled-back', 'failed') ORDER BY r.nodeId, r.seq`).all(app) as RawFact[]).map(toFact);
    },
    async gaps(nodeId) {
      const seqs = (q('SELECT seq FROM receipts WHERE nodeId = ? ORDER BY seq').all(nodeId) as Array<{ seq: number }>).map((r) => r.seq);
      const gaps: number[] = [];
      for (let i = 1; i < seqs.length; i++) {
        // A cap keeps a node claiming seq 2^50 from filling memory.
        for (let s = (seqs[i - 1] as number) + 1; s < (seqs[i] as number) && gaps.length < 1000; s++) gaps.push(s);
      }
      return gaps;
    },
    async insert(nodeId, r, receivedAt) {
      const p = r.payload;
      q(
        `INSERT INTO receipts (nodeId, seq, app, attemptId, outcome, reasonCode, fromVersion, targetVersion, updatedAt, receivedAt, counts, envelope)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(nodeId, p.seq, p.app, p.attemptId, p.outcome, p.reason?.code ?? null, p.fromVersion, p.targetVersion, p.updatedAt, receivedAt, r.counts ? 1 : 0, JSON.stringify(r.envelope));
    },
  };
}
