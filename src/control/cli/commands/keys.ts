import type { Command } from 'commander';
import { printJson } from '../../../cli/output.js';
import { createKeys } from '../../catalog/create-keys.js';
import { jsonOf } from '../context.js';

// `steward-control keys create --out DIR [--name release]`
export function registerKeys(program: Command): void {
  const keys = program.command('keys').description('release signing keys');
  keys
    .command('create')
    .description('write a new Ed25519 key pair: DIR/NAME.key (0600) and DIR/NAME.pub')
    .requiredOption('--out <dir>', 'folder for the key files')
    .option('--name <name>', 'file name stem', 'release')
    .action(async (o: { out: string; name: string }, cmd: Command) => {
      const r = await createKeys(o.out, o.name);
      if (jsonOf(cmd)) return printJson(r);
      process.stdout.write(`keyId ${r.keyId}\nprivate ${r.privateKeyFile}\npublic ${r.publicKeyFile}\n`);
    });
}
