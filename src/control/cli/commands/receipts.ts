import type { Command } from 'commander';
import { printJson, printLines, table, when } from '../../../cli/output.js';
import type { ReceiptView } from '../../operations/receipt-ops.js';
import { jsonOf } from '../context.js';
import { invokeAll } from '../invoke.js';

// The operations' code (zod, their schemas), imported when a subcommand runs: --help and the
// parsing of the command line register the commands without it.
const ops = () => import('../../operations/receipt-ops.js');

// `steward-control receipts [--node N] [--app A] [--select SEL]`
export function registerReceipts(program: Command): void {
  program
    .command('receipts')
    .description('the receipts nodes relayed, as verified when stored, in the order they arrived')
    .option('--node <nodeId>', 'only this node')
    .option('--app <app>', 'only this app')
    .option('--select <selector>', 'only nodes whose labels match, as they are labelled now')
    .option('--logs', 'also print the failed versions\' log lines the receipts carry (operators and admins)')
    .action(async (o: { node?: string; app?: string; select?: string; logs?: boolean }, cmd: Command) => {
      const { logs, ...filter } = o;
      const view = await invokeAll<unknown, ReceiptView>(cmd, (await ops()).receiptsList, filter);
      if (jsonOf(cmd)) return printJson({ receipts: view });
      // The reason's message last: it is the longest, and what says why ("Failed to find executable node").
      const rows = [['WHEN', 'NODE', 'SEQ', 'APP', 'FROM→TO', 'OUTCOME', 'REASON', 'ATTEMPT', 'COUNTS', 'MESSAGE']];
      for (const r of view) rows.push([when(r.updatedAt), r.nodeId, String(r.seq), r.app, `${r.fromVersion ?? '-'}→${r.targetVersion ?? '-'}`, r.outcome, r.reasonCode ?? '-', r.attemptId, r.counts ? `run ${r.runId}` : 'no', r.reasonMessage ?? '-']);
      process.stdout.write(view.length ? table(rows) : 'no receipts\n');
      if (logs) printLogTails(view);
    });
}

// Each failed version's reason and log lines, under a line naming its receipt; every line
// shown() (control characters escaped: the lines are the app's, relayed by a node). A version
// that never started has no log lines: its reason says why it did not.
function printLogTails(view: readonly ReceiptView[]): void {
  for (const r of view) {
    if (r.outcome !== 'rolled-back' && r.outcome !== 'failed') continue;
    const head = `${r.app} ${r.targetVersion ?? '-'} ${r.outcome} on ${r.nodeId} (attempt ${r.attemptId}, seq ${r.seq}):`;
    const reason = `  reason: ${r.reasonCode ?? '-'}: ${r.reasonMessage ?? '(no message in the receipt)'}`;
    if (r.logTail !== null) printLines(['', head, reason, ...r.logTail.replace(/\n$/, '').split('\n').map((l) => `  ${l}`)]);
    else printLines(['', head, reason, r.logTailWithheld ? '  (log lines withheld: they are for operators)' : `  (no log lines in the receipt${r.logFile ? `; on the host: ${r.logFile}` : ''})`]);
  }
}
