// `receipts [--node N] [--app A] [--select SEL]`: the stored receipts in arrival order.
import * as z from '../../core/zod-mini.js';
import type { ReceiptPayload } from '../../core/receipt-schema.js';
import type { Envelope } from '../../core/release-schemas.js';
import { matchesSelector, parseSelector } from '../../core/selector.js';
import type { ReceiptKey, ReceiptRow } from '../store/store.js';
import { decodeCursor, encodeCursor, fillPage, pageLimit } from './paging.js';
import { flag } from './inputs.js';
import type { Operation } from './operation.js';
import { roleAllows } from '../operators/roles.js';

export interface ReceiptView {
  seq: number;
  nodeId: string;
  app: string;
  attemptId: string;
  runId: number | null;
  outcome: ReceiptRow['outcome'];
  reasonCode: string | null;
  reasonMessage: string | null;
  fromVersion: string | null;
  targetVersion: string | null;
  startedAt: number;
  updatedAt: number;
  receivedAt: number;
  counts: boolean;
  // Where the host kept the failed version's log, as the receipt says.
  logFile: string | null;
  // The failed version's last log lines (receipt payload v2, docs/design.md §12), for operators and
  // admins; null for a viewer, who reads everything but log lines.
  logTail: string | null;
  // True when the receipt carries log lines this reader may not see; `envelope` is then null
  // too, since the signed payload holds them.
  logTailWithheld: boolean;
  envelope: Envelope | null;
}

const cursorSchema = z.tuple([z.number().check(z.int(), z.nonnegative()), z.string().check(z.maxLength(256)), z.number().check(z.int(), z.nonnegative())]);

export const receiptsList: Operation<{ node?: string; app?: string; select?: string; cursor?: string; limit?: string }, { receipts: ReceiptView[]; nextCursor: string | null }> = {
  command: 'receipts',
  action: null,
  role: 'viewer',
  paged: 'receipts',
  input: z.strictObject({ node: flag, app: flag, select: flag, cursor: flag, limit: flag }),
  async run(ctx, i) {
    const sel = i.select === undefined ? null : parseSelector(i.select);
    const at = decodeCursor(i.cursor, cursorSchema);
    const after: ReceiptKey | null = at ? { receivedAt: at[0], nodeId: at[1], seq: at[2] } : null;
    const limit = pageLimit(i.limit);
    const seesLogs = roleAllows(ctx.actor.role, 'operator');
    const filter = { ...(i.node ? { nodeId: i.node } : {}), ...(i.app ? { app: i.app } : {}) };
    return ctx.store.read(async (tx) => {
      const selected = sel ? new Set((await tx.nodes.list()).filter((n) => matchesSelector(sel, n.labels)).map((n) => n.nodeId)) : null;
      const keyOf = (r: ReceiptRow): ReceiptKey => ({ receivedAt: r.receivedAt, nodeId: r.nodeId, seq: r.seq });
      const page = await fillPage((a: ReceiptKey | null, n) => tx.receipts.page(filter, a, n), keyOf, after, limit, (r) => !selected || selected.has(r.nodeId));
      const receipts: ReceiptView[] = [];
      for (const r of page.rows) {
        const payload = JSON.parse(Buffer.from(r.envelope.payload, 'base64').toString('utf8')) as ReceiptPayload;
        const withheld = payload.logTail !== undefined && !seesLogs;
        receipts.push({
          seq: r.seq,
          nodeId: r.nodeId,
          app: r.app,
          attemptId: r.attemptId,
          runId: (await tx.runs.attempt(r.attemptId))?.runId ?? null,
          outcome: r.outcome,
          reasonCode: r.reasonCode,
          reasonMessage: payload.reason?.message ?? null,
          fromVersion: r.fromVersion,
          targetVersion: r.targetVersion,
          startedAt: payload.startedAt,
          updatedAt: r.updatedAt,
          receivedAt: r.receivedAt,
          counts: r.counts,
          logFile: typeof payload.logFile === 'string' ? payload.logFile : null,
          logTail: typeof payload.logTail === 'string' && seesLogs ? payload.logTail : null,
          logTailWithheld: withheld,
          envelope: withheld ? null : r.envelope,
        });
      }
      const next = page.next;
      return { receipts, nextCursor: next === null ? null : encodeCursor([next.receivedAt, next.nodeId, next.seq]) };
    });
  },
};
