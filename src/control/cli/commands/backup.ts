import type { Command } from 'commander';
import { StewardError } from '../../../core/errors.js';
import { printJson } from '../../../cli/output.js';
import type { Progress } from '../../backup/dump-store.js';
import type { RunRef, Settled } from '../../backup/settle-loaded.js';
import { artifactsDirOf } from '../../catalog/artifact-path.js';
import { isPostgresUrl } from '../../store/postgres/url.js';
import { artifactsDirFor, dbSpecOf, jsonOf, type ControlGlobals } from '../context.js';

// Backup, restore and copy are imported when one of them runs: --help and the other commands
// load none of their code (the backup file's reader and writer, both stores' loaders).

// Progress of long work on stderr (stdout carries the result, JSON with --json).
function progressOf(command: string): Progress {
  return (line) => process.stderr.write(`steward-control ${command}: ${line}\n`);
}

const totalRows = (tables: Record<string, number>) => Object.values(tables).reduce((a, b) => a + b, 0);
const runList = (runs: RunRef[]) => runs.map((r) => `${r.app} ${r.version} (run ${r.id})`).join(', ');
const at = (ms: number) => new Date(ms).toISOString();

// `steward-control backup --out F [--force]`: a consistent copy of the store at --db (either
// backend) with its kept tarballs, in one file restore reads on either backend.
export function registerBackup(program: Command): void {
  program
    .command('backup')
    .description('write a consistent copy of the database and its kept release tarballs to one file (either backend)')
    .requiredOption('--out <file>', 'the backup file to write (written whole under a temporary name, then renamed)')
    .requiredOption('--key <pem>', 'the backup key\'s private half, which signs the backup (`keys create --out DIR --name backup` makes one; keep it apart from the backups)')
    .option('--force', 'replace --out when it exists')
    .action(async (o: { out: string; key: string; force?: boolean }, cmd: Command) => {
      const db = dbSpecOf(cmd);
      const { backupStore } = await import('../../backup/backup-store.js');
      const r = await backupStore({ db, artifactsDir: artifactsDirFor(cmd, db), out: o.out, force: o.force === true, keyFile: o.key, progress: progressOf('backup') });
      if (jsonOf(cmd)) return printJson(r);
      process.stdout.write(
        `wrote ${r.out}: ${r.db} as it was at ${at(r.takenAt)} (schema version ${r.schemaVersion}), ${totalRows(r.tables)} rows in ${Object.keys(r.tables).length} tables, ${r.artifacts} kept tarballs, ${r.bytes} bytes, signed by backup key ${r.keyId}\n`,
      );
    });
}

// `steward-control restore --from F`: the backup into the empty database --db names.
export function registerRestore(program: Command): void {
  program
    .command('restore')
    .description('restore a backup into an empty database (--db: a SQLite file that does not exist yet, or a PostgreSQL database without steward data)')
    .requiredOption('--from <file>', 'the backup file (from `steward-control backup`)')
    .requiredOption('--key <pem>', 'the backup key that signed it (its .pub, or its .key): a file it did not sign is refused')
    .action(async (o: { from: string; key: string }, cmd: Command) => {
      const db = dbSpecOf(cmd);
      const { restoreStore } = await import('../../backup/restore-store.js');
      const r = await restoreStore({ from: o.from, db, artifactsDir: artifactsDirFor(cmd, db), keyFile: o.key, progress: progressOf('restore') });
      if (jsonOf(cmd)) return printJson(r);
      const migrated = r.migratedTo !== r.schemaVersion ? `, migrated from schema version ${r.schemaVersion} to ${r.migratedTo}` : ` (schema version ${r.schemaVersion})`;
      process.stdout.write(`restored ${r.from}, taken at ${at(r.takenAt)}, into ${r.db}${migrated}: ${totalRows(r.tables)} rows, ${r.artifacts} kept tarballs\n`);
      if (r.stoppedRuns.length > 0) process.stdout.write(`stopped the rollouts that were running at the backup: ${runList(r.stoppedRuns)}; \`steward-control rollout retry <app>\` starts one again\n`);
      printTokenNote(r);
    });
}

// `steward-control copy --from FILE --to postgres://...`: the move from SQLite to PostgreSQL.
export function registerCopy(program: Command): void {
  program
    .command('copy')
    .description('copy a control plane into an empty database (SQLite to PostgreSQL): nodes keep their identities and seqs, rollouts keep running; stop serve first')
    .requiredOption('--from <file|url>', 'the database to copy (a SQLite file, or a postgres:// URL)')
    .requiredOption('--to <url|file>', 'the empty database to copy into (a postgres:// URL, or a SQLite file that does not exist yet); its schema is made by the copy')
    .option('--from-artifacts <dir>', "the source's folder of kept release tarballs (default: beside a SQLite --from)")
    .action(async (o: { from: string; to: string; fromArtifacts?: string }, cmd: Command) => {
      const g = cmd.optsWithGlobals<ControlGlobals>();
      if (g.server !== undefined || g.db !== undefined) throw new StewardError('USAGE', '`copy` runs beside both databases: name them with --from and --to (not --db or --server)');
      const fromArtifacts = o.fromArtifacts ?? (isPostgresUrl(o.from) ? null : artifactsDirOf(o.from));
      if (fromArtifacts === null) throw new StewardError('USAGE', 'with a PostgreSQL --from, name its folder of release tarballs with --from-artifacts DIR');
      const { copyStore } = await import('../../backup/copy-store.js');
      const r = await copyStore({ from: o.from, to: o.to, fromArtifacts, toArtifacts: artifactsDirFor(cmd, o.to), progress: progressOf('copy') });
      if (jsonOf(cmd)) return printJson(r);
      const migrated = r.migratedTo !== r.schemaVersion ? `, migrated from schema version ${r.schemaVersion} to ${r.migratedTo}` : ` (schema version ${r.schemaVersion})`;
      process.stdout.write(`copied ${r.from} as it was at ${at(r.takenAt)} into ${r.to}${migrated}: ${totalRows(r.tables)} rows, ${r.artifacts} kept tarballs\n`);
      if (r.runningRuns.length > 0) process.stdout.write(`rollouts that go on from where they were: ${runList(r.runningRuns)}\n`);
    });
}

function printTokenNote(r: Pick<Settled, 'openTokens'>): void {
  if (r.openTokens === 0) return;
  process.stdout.write(
    `note: ${r.openTokens} enrollment token(s) are unspent in the restored data; one spent after the backup can be spent again: \`steward-control token list\`, and \`token revoke\` those you do not mean to leave open\n`,
  );
}
