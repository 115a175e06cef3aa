import type { Command } from 'commander';
import { printJson, table, when } from '../../../cli/output.js';
import { receiptsList, type ReceiptView } from '../../operations/receipt-ops.js';
import { jsonOf } from '../context.js';
import { invokeAll } from '../invoke.js';

// `steward-control receipts [--node N] [--app A] [--select SEL]`
export function registerReceipts(program: Command): void {
  program
    .command('receipts')
    .description('the receipts nodes relayed, as verified when stored, in the order they arrived')
    .option('--node <nodeId>', 'only this node')
    .option('--app <app>', 'only this app')
    .option('--select <selector>', 'only nodes whose labels match, as they are labelled now')
    .action(async (o: { node?: string; app?: string; select?: string }, cmd: Command) => {
      const view = await invokeAll<unknown, ReceiptView>(cmd, receiptsList, o);
      if (jsonOf(cmd)) return printJson({ receipts: view });
      const rows = [['WHEN', 'NODE', 'SEQ', 'APP', 'FROM→TO', 'OUTCOME', 'REASON', 'ATTEMPT', 'COUNTS']];
      for (const r of view) rows.push([when(r.updatedAt), r.nodeId, String(r.seq), r.app, `${r.fromVersion ?? '-'}→${r.targetVersion ?? '-'}`, r.outcome, r.reasonCode ?? '-', r.attemptId, r.counts ? `run ${r.runId}` : 'no']);
      process.stdout.write(view.length ? table(rows) : 'no receipts\n');
    });
}
