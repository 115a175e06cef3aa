import type { Command } from 'commander';
import { printJson } from '../../../cli/output.js';
import type { MigrateOutcome } from '../../store/open-store.js';
import { dbSpecOf, jsonOf } from '../context.js';

// The store's code, imported when the command runs: --help registers the command without it.
const store = () => import('../../store/open-store.js');

// `steward-control init`: creates the database (the only command that does, with `serve --init`),
// or brings an existing one to this steward-control's schema. Idempotent. On PostgreSQL it is
// `migrate`: the database itself is the DBA's to create.
export function registerInit(program: Command): void {
  program
    .command('init')
    .description('create the database (or migrate an existing one to this schema)')
    .action(async (_o: unknown, cmd: Command) => printMigrated(cmd, await (await store()).migrateStore(dbSpecOf(cmd), { create: true })));
}

// `steward-control migrate`: brings an existing database to this steward-control's schema (on
// PostgreSQL under an advisory lock, so that instances being upgraded may run it at once).
// Never run by serve (docs/design.md §13). Idempotent.
export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description("bring the database to this steward-control's schema (PostgreSQL: under a database lock; serve never migrates)")
    .action(async (_o: unknown, cmd: Command) => printMigrated(cmd, await (await store()).migrateStore(dbSpecOf(cmd))));
}

function printMigrated(cmd: Command, r: MigrateOutcome): void {
  if (jsonOf(cmd)) return printJson(r);
  const applied = r.applied?.length ? `, applied ${r.applied.join(', ')}` : '';
  process.stdout.write(`${r.created ? 'created' : 'kept'} ${r.db} (schema version ${r.schemaVersion}${applied})\n`);
}
