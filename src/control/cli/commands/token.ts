import type { Command } from 'commander';
import { formatLabels } from '../../../core/labels.js';
import { printJson, table, when } from '../../../cli/output.js';
import { jsonOf } from '../context.js';
import { invoke } from '../invoke.js';

// The operations' code (zod, their schemas), imported when a subcommand runs: --help and the
// parsing of the command line register the commands without it.
const ops = () => import('../../operations/token-ops.js');

const collect = (v: string, acc: string[]) => [...acc, v];

// `steward-control token create [--ttl 1h] [--label k=v]...`, `token list`, `token revoke <id>`
export function registerToken(program: Command): void {
  const token = program.command('token').description('enrollment tokens');
  token
    .command('create')
    .description('create a single-use enrollment token (shown once; only its hash is stored)')
    .option('--ttl <duration>', 'how long it stays valid', '1h')
    .option('--label <k=v>', 'a label the enrolled node gets (repeatable)', collect, [] as string[])
    .action(async (o: { ttl: string; label: string[] }, cmd: Command) => {
      const t = await invoke(cmd, (await ops()).tokenCreate, o);
      if (jsonOf(cmd)) return printJson(t);
      process.stdout.write(t.token + '\n');
      process.stderr.write(`steward-control: token ${t.id} valid until ${when(t.expiresAt)}, for one enrollment${Object.keys(t.labels).length ? `; its node gets ${formatLabels(t.labels)}` : ''}\n`);
    });
  token
    .command('list')
    .description('every enrollment token: id, state, labels, the node that used it')
    .action(async (_o: unknown, cmd: Command) => {
      const out = await invoke(cmd, (await ops()).tokenList, {});
      if (jsonOf(cmd)) return printJson(out);
      const rows = [['ID', 'STATE', 'CREATED', 'EXPIRES', 'USED BY', 'LABELS']];
      for (const t of out.tokens) rows.push([t.id, t.state, when(t.createdAt), when(t.expiresAt), t.usedBy ?? '-', formatLabels(t.labels)]);
      process.stdout.write(out.tokens.length ? table(rows) : 'no tokens\n');
    });
  token
    .command('revoke <id>')
    .description('revoke an unused token (it enrolls nothing from now on)')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const r = await invoke(cmd, (await ops()).tokenRevoke, { id });
      if (jsonOf(cmd)) return printJson(r);
      process.stdout.write(`revoked ${r.revoked}\n`);
    });
}
