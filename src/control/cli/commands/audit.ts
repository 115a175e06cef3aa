import type { Command } from 'commander';
import { printJson, table, when } from '../../../cli/output.js';
import { StewardError } from '../../../core/errors.js';
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

// `steward-control audit [--since 1h|ISO] [--format jsonl|csv]`: who changed what, and every login
// and denial, oldest first.
export function registerAudit(program: Command): void {
  program
    .command('audit')
    .description('the audit log: every change (API, dashboard, local CLI), login and denial, oldest first')
    .option('--since <duration|time>', 'only the entries of the last DURATION (like 1h, 30m, 2d), or since an ISO time with its zone (2026-12-01T09:00:00Z) or a date (2026-12-01, UTC)')
    .option('--format <format>', 'print for a script or a spreadsheet: jsonl (one JSON object a line) or csv (RFC 4180, formulas neutralized)')
    .action(async (o: { since?: string; format?: string }, cmd: Command) => {
      if (o.format !== undefined && o.format !== 'jsonl' && o.format !== 'csv') throw new StewardError('USAGE', `--format ${JSON.stringify(o.format)} is not jsonl or csv`);
      if (o.format !== undefined && jsonOf(cmd)) throw new StewardError('USAGE', '--format and --json are two outputs: pass one');
      const entries = await invokeAll<unknown, AuditRow>(cmd, (await ops()).auditList, { since: o.since });
      if (o.format !== undefined) {
        const { auditCsv, auditJsonl } = await import('../../audit/export-audit.js');
        return void process.stdout.write(o.format === 'csv' ? auditCsv(entries) : auditJsonl(entries));
      }
      if (jsonOf(cmd)) return printJson({ entries });
      const rows = [['WHEN', 'OPERATOR', 'ACTION', 'TARGET', 'SOURCE', 'DETAILS']];
      for (const e of entries) rows.push([when(e.at), e.operator ?? '-', e.action, e.target ?? '-', e.source ?? '-', detailsText(e.details)]);
      process.stdout.write(entries.length ? table(rows) : 'no audit entries\n');
    });
}
