import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { StewardError } from '../../core/errors.js';
import { SCHEMA_V1, STORE_SCHEMA_VERSION } from './schema.js';

// The control plane's database. Several processes (serve and CLI commands) may open one file at
// once: WAL lets readers run beside a writer, busy_timeout waits for the write lock.
export interface ControlStore {
  db: Database.Database;
  file: string;
  // Runs `fn` in a BEGIN IMMEDIATE transaction: the write lock is taken first, so a read inside
  // cannot go stale before the write. Everything `fn` did is undone when it throws.
  write<T>(fn: () => T): T;
  // The prepared statement of `sql`, compiled once per store: compiling it on every call was a
  // quarter of a heartbeat's CPU. Callers must not change a statement's mode (pluck, raw, expand).
  prepare(sql: string): Database.Statement;
  close(): void;
}

// Opens (and on first use creates) the store at `file`. A store whose user_version is newer than
// this steward-control knows is refused with STATE_INVALID.
export function openStore(file: string, opts: { create?: boolean } = {}): ControlStore {
  if (opts.create === false && !existsSync(file)) {
    throw new StewardError('NOT_FOUND', `control plane database ${file} does not exist (run \`steward-control serve\` or \`token create\` first, or pass --db)`);
  }
  let db: Database.Database;
  try {
    db = new Database(file);
  } catch (err) {
    throw new StewardError('IO_ERROR', `cannot open the control plane database ${file}: ${(err as Error).message}`, { cause: err });
  }
  try {
    db.pragma('busy_timeout = 5000');
    db.pragma('journal_mode = WAL');
    // Why: opened as above, the store answered synchronous=NORMAL (1), which in WAL mode does not
    // fsync a commit. A heartbeat's answer acknowledges its receipts and the agent then deletes
    // them from its outbox: a power cut after the answer must not lose the commit behind it.
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    migrate(db, file);
  } catch (err) {
    db.close();
    throw err;
  }
  const statements = new Map<string, Database.Statement>();
  return {
    db,
    file,
    write: <T>(fn: () => T): T => db.transaction(fn).immediate(),
    prepare: (sql) => {
      let st = statements.get(sql);
      if (!st) statements.set(sql, (st = db.prepare(sql)));
      return st;
    },
    close: () => db.close(),
  };
}

function migrate(db: Database.Database, file: string): void {
  db.transaction(() => {
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version > STORE_SCHEMA_VERSION) {
      throw new StewardError(
        'STATE_INVALID',
        `control plane database ${file} has schema version ${version}, newer than ${STORE_SCHEMA_VERSION} which this steward-control knows; use a newer steward-control`,
      );
    }
    if (version === 0) {
      db.exec(SCHEMA_V1);
      db.pragma(`user_version = ${STORE_SCHEMA_VERSION}`);
    }
  }).immediate();
}
