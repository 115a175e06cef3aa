import type { Envelope } from '../../core/release-schemas.js';
import type { ReceiptPayload } from '../../core/receipt-schema.js';
import type { ControlStore } from './open-store.js';

export interface ReceiptRow {
  nodeId: string;
  seq: number;
  app: string;
  attemptId: string;
  outcome: ReceiptPayload['outcome'];
  reasonCode: string | null;
  fromVersion: string | null;
  targetVersion: string | null;
  updatedAt: number;
  receivedAt: number;
  counts: number;
  envelope: string;
}

// Stores one verified receipt of `nodeId` (the relaying node, which the verifier tied it to).
export function insertReceipt(store: ControlStore, nodeId: string, r: { envelope: Envelope; payload: ReceiptPayload; counts: boolean }, receivedAt: number): void {
  const p = r.payload;
  store
    .prepare(
      `INSERT INTO receipts (nodeId, seq, app, attemptId, outcome, reasonCode, fromVersion, targetVersion, updatedAt, receivedAt, counts, envelope)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .run(nodeId, p.seq, p.app, p.attemptId, p.outcome, p.reason?.code ?? null, p.fromVersion, p.targetVersion, p.updatedAt, receivedAt, r.counts ? 1 : 0, JSON.stringify(r.envelope));
}

// The envelope stored for a node's receipt seq, or null.
export function storedReceiptEnvelope(store: ControlStore, nodeId: string, seq: number): Envelope | null {
  const row = store.prepare('SELECT envelope FROM receipts WHERE nodeId = ? AND seq = ?').get(nodeId, seq) as { envelope: string } | undefined;
  return row ? (JSON.parse(row.envelope) as Envelope) : null;
}

// Stored receipts, oldest seq first per node, optionally of one node and/or one app.
export function listReceipts(store: ControlStore, filter: { nodeId?: string; app?: string } = {}): ReceiptRow[] {
  const where: string[] = [];
  const args: string[] = [];
  if (filter.nodeId) (where.push('nodeId = ?'), args.push(filter.nodeId));
  if (filter.app) (where.push('app = ?'), args.push(filter.app));
  const sql = `SELECT * FROM receipts ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY receivedAt, nodeId, seq`;
  return store.prepare(sql).all(...args) as ReceiptRow[];
}

// The counting receipts that answer any of the given attemptIds.
export function countingReceiptsFor(store: ControlStore, attemptIds: string[]): ReceiptRow[] {
  if (attemptIds.length === 0) return [];
  const out: ReceiptRow[] = [];
  const stmt = store.prepare('SELECT * FROM receipts WHERE attemptId = ? AND counts = 1');
  for (const id of attemptIds) out.push(...(stmt.all(id) as ReceiptRow[]));
  return out;
}

// Versions of `app` this node rolled back or failed, from any stored receipt (any run or none).
export function revertedVersions(store: ControlStore, nodeId: string, app: string): string[] {
  const rows = store
    .prepare(`SELECT DISTINCT targetVersion FROM receipts WHERE nodeId = ? AND app = ? AND outcome IN ('rolled-back', 'failed') AND targetVersion IS NOT NULL`)
    .all(nodeId, app) as Array<{ targetVersion: string }>;
  return rows.map((r) => r.targetVersion);
}

// Missing seqs between a node's lowest and highest stored receipt seq: receipts lost on the way.
export function receiptGaps(store: ControlStore, nodeId: string): number[] {
  const seqs = (store.prepare('SELECT seq FROM receipts WHERE nodeId = ? ORDER BY seq').all(nodeId) as Array<{ seq: number }>).map((r) => r.seq);
  const gaps: number[] = [];
  for (let i = 1; i < seqs.length; i++) {
    const prev = seqs[i - 1] as number;
    const cur = seqs[i] as number;
    // A cap keeps a node claiming seq 2^50 from filling memory; the count is still right below it.
    for (let s = prev + 1; s < cur && gaps.length < 1000; s++) gaps.push(s);
  }
  return gaps;
}
