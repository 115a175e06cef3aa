import type { Command } from 'commander';
import { printJson, table, when } from '../../../cli/output.js';
import { jsonOf } from '../context.js';
import { invoke } from '../invoke.js';

// The operations' code (zod, their schemas), imported when a subcommand runs: --help and the
// parsing of the command line register the commands without it.
const ops = () => import('../../operations/operator-ops.js');

// `steward-control operator add NAME --role viewer|operator|admin`, `operator list`,
// `operator remove NAME`, `operator rotate NAME` (docs/design.md §12). The first admin is added on the
// server host (`--db`); the token printed is what STEWARD_CONTROL_TOKEN then holds.
export function registerOperator(program: Command): void {
  const operator = program.command('operator').description('who may use the admin API and the dashboard, with which role');
  operator
    .command('add <name>')
    .description('add an operator and print its API token (once; only its hash is stored)')
    .requiredOption('--role <role>', 'viewer (reads everything but log lines), operator (also runs rollouts, labels nodes, makes enrollment tokens), or admin (also operators, releases, keys, nodes)')
    .action(async (name: string, o: { role: string }, cmd: Command) => {
      const r = await invoke(cmd, (await ops()).operatorAdd, { name, role: o.role });
      if (jsonOf(cmd)) return printJson(r);
      process.stdout.write(r.token + '\n');
      process.stderr.write(`steward-control: operator ${r.name} (${r.role}) added; the token above is shown once: keep it in STEWARD_CONTROL_TOKEN\n`);
    });
  operator
    .command('list')
    .description('every operator: role, when added and rotated, live dashboard sessions (never a token)')
    .action(async (_o: unknown, cmd: Command) => {
      const out = await invoke(cmd, (await ops()).operatorList, {});
      if (jsonOf(cmd)) return printJson(out);
      const rows = [['NAME', 'ROLE', 'ADDED', 'ROTATED', 'SESSIONS']];
      for (const o of out.operators) rows.push([o.name, o.role, when(o.createdAt), when(o.rotatedAt), String(o.sessions)]);
      process.stdout.write(out.operators.length ? table(rows) : 'no operators (add the first one on the server host: `steward-control operator add NAME --role admin --db FILE`)\n');
    });
  operator
    .command('remove <name>')
    .description('remove an operator: its token stops working and its sessions end')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const r = await invoke(cmd, (await ops()).operatorRemove, { name });
      if (jsonOf(cmd)) return printJson(r);
      process.stdout.write(`removed ${r.removed}${r.sessionsEnded ? `; ${r.sessionsEnded} session${r.sessionsEnded === 1 ? '' : 's'} ended` : ''}\n`);
    });
  operator
    .command('rotate <name>')
    .description('give an operator a new token (printed once): the old one stops working and its sessions end')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const r = await invoke(cmd, (await ops()).operatorRotate, { name });
      if (jsonOf(cmd)) return printJson(r);
      process.stdout.write(r.token + '\n');
      process.stderr.write(`steward-control: operator ${r.name} has a new token (shown once); the old one no longer works${r.sessionsEnded ? `, and ${r.sessionsEnded} session${r.sessionsEnded === 1 ? '' : 's'} ended` : ''}\n`);
    });
}
