import type { Command } from 'commander';
import { printJson, when } from '../../../cli/output.js';
import { createToken } from '../../enroll/tokens.js';
import { jsonOf, withStore } from '../context.js';
import { parseDuration } from '../parse-options.js';

// `steward-control token create [--ttl 1h]`
export function registerToken(program: Command): void {
  const token = program.command('token').description('enrollment tokens');
  token
    .command('create')
    .description('create a single-use enrollment token (shown once; only its hash is stored)')
    .option('--ttl <duration>', 'how long it stays valid', '1h')
    .action(async (o: { ttl: string }, cmd: Command) => {
      const ttlMs = parseDuration(o.ttl, '--ttl');
      const t = await withStore(cmd, (store) => store.write((tx) => createToken(tx, ttlMs)));
      if (jsonOf(cmd)) return printJson(t);
      process.stdout.write(t.token + '\n');
      process.stderr.write(`steward-control: token valid until ${when(t.expiresAt)}, for one enrollment\n`);
    });
}
