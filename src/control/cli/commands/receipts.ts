import type { Command } from 'commander';
import type { ReceiptPayload } from '../../../core/receipt-schema.js';
import { matchesSelector, parseSelector } from '../../../core/selector.js';
import { printJson, table, when } from '../../../cli/output.js';
import { jsonOf, withStore } from '../context.js';

// `steward-control receipts [--node N] [--app A] [--select SEL]`
export function registerReceipts(program: Command): void {
  program
    .command('receipts')
    .description('the receipts nodes relayed, as verified when stored, in the order they arrived')
    .option('--node <nodeId>', 'only this node')
    .option('--app <app>', 'only this app')
    .option('--select <selector>', 'only nodes whose labels match, as they are labelled now')
    .action(async (o: { node?: string; app?: string; select?: string }, cmd: Command) => {
      const sel = o.select === undefined ? null : parseSelector(o.select);
      const view = await withStore(cmd, (store) =>
        store.read(async (tx) => {
          const out = [];
          const selected = sel ? new Set((await tx.nodes.list()).filter((n) => matchesSelector(sel, n.labels)).map((n) => n.nodeId)) : null;
          for (const r of await tx.receipts.list({ ...(o.node ? { nodeId: o.node } : {}), ...(o.app ? { app: o.app } : {}) })) {
          if (selected && !selected.has(r.nodeId)) continue;
          const envelope = r.envelope;
          const payload = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')) as ReceiptPayload;
          out.push({
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
            envelope,
          });
          }
          return out;
        }),
      );
      if (jsonOf(cmd)) return printJson({ receipts: view });
      const rows = [['WHEN', 'NODE', 'SEQ', 'APP', 'FROM→TO', 'OUTCOME', 'REASON', 'ATTEMPT', 'COUNTS']];
      for (const r of view) rows.push([when(r.updatedAt), r.nodeId, String(r.seq), r.app, `${r.fromVersion ?? '-'}→${r.targetVersion ?? '-'}`, r.outcome, r.reasonCode ?? '-', r.attemptId, r.counts ? `run ${r.runId}` : 'no']);
      process.stdout.write(view.length ? table(rows) : 'no receipts\n');
    });
}
