import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { StewardError } from '../../../core/errors.js';
import { printJson, table, when } from '../../../cli/output.js';
import { keyIdOf, parsePublicKey } from '../../../platform/keys.js';
import { createKeys } from '../../catalog/create-keys.js';
import { jsonOf, withStore } from '../context.js';
import { checkNames } from './release.js';

// The key id of a PEM file holding an Ed25519 public or private key.
function keyIdOfFile(file: string): string {
  let pem: Buffer;
  try {
    pem = readFileSync(file);
  } catch (err) {
    throw new StewardError('NOT_FOUND', `cannot read the key ${file}: ${(err as Error).message}`, { cause: err });
  }
  try {
    return keyIdOf(parsePublicKey(pem));
  } catch (err) {
    throw new StewardError('USAGE', `${file} is not an Ed25519 key (PEM): ${(err as Error).message}`, { cause: err });
  }
}

// `steward-control keys create --out DIR [--name release]`, `keys list [app]`, `keys allow <app> --key PEM`
export function registerKeys(program: Command): void {
  const keys = program.command('keys').description('release signing keys, and the ones each app allows');
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
  keys
    .command('list [app]')
    .description('the key ids allowed to sign each app (the first release of an app allows its key)')
    .action(async (app: string | undefined, _o: unknown, cmd: Command) => {
      if (app) checkNames(app);
      const rows = await withStore(cmd, (store) =>
        store.read(async (tx) => {
          const releases = await tx.releases.list(app);
          return (await tx.releases.keys(app)).map((k) => ({ ...k, releases: releases.filter((r) => r.app === k.app && r.keyId === k.keyId).map((r) => r.version) }));
        }),
      );
      if (jsonOf(cmd)) return printJson({ keys: rows });
      const t = [['APP', 'KEY', 'ALLOWED SINCE', 'SIGNS']];
      for (const k of rows) t.push([k.app, k.keyId, when(k.addedAt), k.releases.join(',') || '-']);
      process.stdout.write(rows.length ? table(t) : 'no keys allowed yet (the first `release add` of an app allows its key)\n');
    });
  keys
    .command('allow <app>')
    .description("allow another key to sign the app's releases (a key rotation)")
    .requiredOption('--key <pem>', 'the Ed25519 public key (or its private key) to allow')
    .action(async (app: string, o: { key: string }, cmd: Command) => {
      checkNames(app);
      const keyId = keyIdOfFile(o.key);
      await withStore(cmd, (store) => store.write(async (tx) => tx.releases.allowKey(app, keyId, await tx.now())));
      if (jsonOf(cmd)) return printJson({ app, keyId });
      process.stdout.write(`${app}: key ${keyId} allowed\n`);
    });
}
