import type { Command } from 'commander';
import { StewardError } from '../../core/errors.js';
import { artifactsDirOf } from '../catalog/artifact-path.js';
import type { OpenStoreOptions } from '../store/open-store.js';
import { isPostgresUrl } from '../store/postgres/url.js';
import type { ControlStore } from '../store/store.js';
import { remoteTarget, type RemoteTarget } from './remote-client.js';

export interface ControlGlobals {
  db?: string;
  artifacts?: string;
  json?: boolean;
  server?: string;
  caFile?: string;
}

// Where a command runs: on the database file (the server host), or through the admin API.
export type Target = { kind: 'local'; db: string } | { kind: 'remote'; remote: RemoteTarget };

const env = (name: string) => process.env[name] || undefined;

// The target of a command: --db or --server (not both); else STEWARD_CONTROL_DB or
// STEWARD_CONTROL_URL (not both), with STEWARD_CONTROL_TOKEN and --ca-file for the latter.
export function targetOf(cmd: Command): Target {
  const g = cmd.optsWithGlobals<ControlGlobals>();
  if (g.server !== undefined && g.db !== undefined) throw new StewardError('USAGE', 'pass --db FILE|URL (beside the database) or --server URL (through the admin API), not both');
  const server = g.server ?? (g.db === undefined ? env('STEWARD_CONTROL_URL') : undefined);
  const db = g.db ?? (g.server === undefined ? env('STEWARD_CONTROL_DB') : undefined);
  if (server !== undefined && db !== undefined) throw new StewardError('USAGE', 'STEWARD_CONTROL_URL and STEWARD_CONTROL_DB are both set: unset one, or pass --server or --db');
  if (server !== undefined) return { kind: 'remote', remote: remoteTarget(server, env('STEWARD_CONTROL_TOKEN'), g.caFile) };
  if (db !== undefined) return { kind: 'local', db };
  throw new StewardError('USAGE', 'no database: pass --db FILE|URL or set STEWARD_CONTROL_DB (or --server URL / STEWARD_CONTROL_URL, with STEWARD_CONTROL_TOKEN, for the admin API)');
}

// The database (a file or a postgres:// URL) from --db or STEWARD_CONTROL_DB, for the commands
// that run only beside the database (init, migrate, serve): --server is refused there.
export function dbSpecOf(cmd: Command): string {
  const g = cmd.optsWithGlobals<ControlGlobals>();
  if (g.server !== undefined) throw new StewardError('USAGE', `\`${cmd.name()}\` runs on the server host, on its database (--db), not through --server`);
  const db = g.db ?? env('STEWARD_CONTROL_DB');
  if (!db) throw new StewardError('USAGE', 'no database: pass --db FILE|URL or set STEWARD_CONTROL_DB');
  return db;
}

// Whether --json was given.
export function jsonOf(cmd: Command): boolean {
  return cmd.optsWithGlobals<ControlGlobals>().json === true;
}

// Where the store's kept release tarballs live: --artifacts DIR (or STEWARD_CONTROL_ARTIFACTS);
// for a SQLite file, by default beside it. A PostgreSQL store has no file to put them beside:
// the folder must be named (one every instance reads, docs/design.md §13).
export function artifactsDirFor(cmd: Command, db: string): string {
  const dir = cmd.optsWithGlobals<ControlGlobals>().artifacts ?? env('STEWARD_CONTROL_ARTIFACTS');
  if (dir !== undefined) return dir;
  if (isPostgresUrl(db)) throw new StewardError('USAGE', 'with a PostgreSQL --db, name the folder of the release tarballs with --artifacts DIR (or STEWARD_CONTROL_ARTIFACTS)');
  return artifactsDirOf(db);
}

// Runs `fn` with the store at `db` open (a SQLite file that does not exist is refused, unless
// `opts.create`), and closes it after.
export async function withStoreAt<T>(db: string, fn: (store: ControlStore) => T | Promise<T>, opts: OpenStoreOptions = {}): Promise<T> {
  // Why imported here: the store's code (better-sqlite3, its schema) is for the commands run on
  // the database; --help and a command run through --server load none of it.
  const { openStore } = await import('../store/open-store.js');
  const store = await openStore(db, opts);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}
