import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { StewardError } from '../../../core/errors.js';
import { printJson, table, when } from '../../../cli/output.js';
import { jsonOf } from '../context.js';
import { invoke } from '../invoke.js';

// What the subcommands run (the key code, the operations' schemas), imported when one runs: --help
// and the parsing of the command line register the commands without it.
const ops = () => import('../../operations/release-ops.js');

// The public key (SPKI PEM) of a PEM file holding an Ed25519 public or private key: only the
// public half is ever sent.
async function publicPemOfFile(file: string): Promise<string> {
  const { parsePublicKey } = await import('../../../platform/keys.js');
  let pem: Buffer;
  try {
    pem = readFileSync(file);
  } catch (err) {
    throw new StewardError('NOT_FOUND', `cannot read the key ${file}: ${(err as Error).message}`, { cause: err });
  }
  try {
    return parsePublicKey(pem).export({ format: 'pem', type: 'spki' }).toString();
  } catch (err) {
    throw new StewardError('USAGE', `${file} is not an Ed25519 key (PEM): ${(err as Error).message}`, { cause: err });
  }
}

// `steward-control keys create --out DIR [--name release]`, `keys list [app]`, `keys allow <app> --key PEM`
export function registerKeys(program: Command): void {
  const keys = program.command('keys').description('release signing keys, and the ones each app allows');
  keys
    .command('create')
    .description('write a new Ed25519 key pair: DIR/NAME.key (0600) and DIR/NAME.pub (on this machine, whatever --server says)')
    .requiredOption('--out <dir>', 'folder for the key files')
    .option('--name <name>', 'file name stem', 'release')
    .action(async (o: { out: string; name: string }, cmd: Command) => {
      const { createKeys } = await import('../../catalog/create-keys.js');
      const r = await createKeys(o.out, o.name);
      if (jsonOf(cmd)) return printJson(r);
      process.stdout.write(`keyId ${r.keyId}\nprivate ${r.privateKeyFile}\npublic ${r.publicKeyFile}\n`);
    });
  keys
    .command('list [app]')
    .description('the key ids allowed to sign each app (the first release of an app allows its key)')
    .action(async (app: string | undefined, _o: unknown, cmd: Command) => {
      const out = await invoke(cmd, (await ops()).keysList, { app });
      if (jsonOf(cmd)) return printJson(out);
      const t = [['APP', 'KEY', 'ALLOWED SINCE', 'SIGNS']];
      for (const k of out.keys) t.push([k.app, k.keyId, when(k.addedAt), k.releases.join(',') || '-']);
      process.stdout.write(out.keys.length ? table(t) : 'no keys allowed yet (the first `release add` of an app allows its key)\n');
    });
  keys
    .command('allow <app>')
    .description("allow another key to sign the app's releases (a key rotation)")
    .requiredOption('--key <pem>', 'the Ed25519 public key (or its private key) to allow')
    .action(async (app: string, o: { key: string }, cmd: Command) => {
      const { checkNames } = await import('../../operations/check-names.js');
      checkNames(app);
      const r = await invoke(cmd, (await ops()).keysAllow, { app, publicKey: await publicPemOfFile(o.key) });
      if (jsonOf(cmd)) return printJson(r);
      process.stdout.write(`${r.app}: key ${r.keyId} allowed\n`);
    });
}
