import type { Command } from 'commander';
import { printJson, table, when } from '../../../cli/output.js';
import type { AuditRow } from '../../store/store.js';
import { jsonOf } from '../context.js';
import { invokeAll } from '../invoke.js';

// The operations' code (zod, their schemas), imported when a subcommand runs: --help and the
// parsing of the command line register the commands without it.
const ops = () => import('../../operations/audit-ops.js');

// A short form of an entry's details for the table.
function detailsText(d: Record<string, unknown>): string {
  const text = Object.entries(d)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  return text.length > 160 ? text.slice(0, 157) + '...' : text || '-';
}

// `steward-control audit [--since 1h]`: who changed what, and every login and denial, oldest first.
export function registerAudit(program: Command): void {
  program
    .command('audit')
    .description('the audit log: every change (API, dashboard, local CLI), login and denial, oldest first')
    .option('--since <duration>', 'only the entries of the last DURATION (like 1h, 30m, 2d)')
    .action(async (o: { since?: string }, cmd: Command) => {
      const entries = await invokeAll<unknown, AuditRow>(cmd, (await ops()).auditList, { since: o.since });
      if (jsonOf(cmd)) return printJson({ entries });
      const rows = [['WHEN', 'OPERATOR', 'ACTION', 'TARGET', 'SOURCE', 'DETAILS']];
      for (const e of entries) rows.push([when(e.at), e.operator ?? '-', e.action, e.target ?? '-', e.source ?? '-', detailsText(e.details)]);
      process.stdout.write(entries.length ? table(rows) : 'no audit entries\n');
    });
}
