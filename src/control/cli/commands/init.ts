import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { printJson } from '../../../cli/output.js';
import { STORE_SCHEMA_VERSION } from '../../store/sqlite/schema.js';
import { dbFileOf, jsonOf, withStore } from '../context.js';

// `steward-control init`: creates the database (the only command that does, with `serve --init`),
// or brings an existing one to this steward-control's schema. Idempotent.
export function registerInit(program: Command): void {
  program
    .command('init')
    .description('create the database (or migrate an existing one to this schema)')
    .action(async (_o: unknown, cmd: Command) => {
      const file = dbFileOf(cmd);
      const created = !existsSync(file);
      await withStore(cmd, () => undefined, { create: true });
      if (jsonOf(cmd)) return printJson({ db: file, created, schemaVersion: STORE_SCHEMA_VERSION });
      process.stdout.write(`${created ? 'created' : 'kept'} ${file} (schema version ${STORE_SCHEMA_VERSION})\n`);
    });
}
