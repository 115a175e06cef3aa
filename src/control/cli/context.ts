import type { Command } from 'commander';
import { StewardError } from '../../core/errors.js';
import { artifactsDirOf } from '../catalog/artifact-path.js';
import { openStore, type OpenStoreOptions, type SqliteStore } from '../store/sqlite/open-sqlite-store.js';

export interface ControlGlobals {
  db?: string;
  json?: boolean;
}

// The database file from --db or STEWARD_CONTROL_DB.
export function dbFileOf(cmd: Command): string {
  const db = cmd.optsWithGlobals<ControlGlobals>().db ?? process.env.STEWARD_CONTROL_DB;
  if (!db) throw new StewardError('USAGE', 'no database: pass --db FILE or set STEWARD_CONTROL_DB');
  return db;
}

// Whether --json was given.
export function jsonOf(cmd: Command): boolean {
  return cmd.optsWithGlobals<ControlGlobals>().json === true;
}

// Where the store's kept release tarballs live: beside the SQLite file.
export function artifactsDirOfStore(store: SqliteStore): string {
  return artifactsDirOf(store.file);
}

// Runs `fn` with the store open (refused when its file does not exist, unless `opts.create`),
// and closes it after.
export async function withStore<T>(cmd: Command, fn: (store: SqliteStore) => T | Promise<T>, opts: OpenStoreOptions = {}): Promise<T> {
  const store = openStore(dbFileOf(cmd), opts);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}
