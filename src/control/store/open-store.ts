import Database from 'better-sqlite3';
import { closeSync, existsSync, fchmodSync, fstatSync, openSync, constants as fsc } from 'node:fs';
import { StewardError } from '../../core/errors.js';
import { logger } from '../../platform/log.js';
import { SCHEMA_V1, STORE_SCHEMA_VERSION } from './schema.js';

const log = logger('control:store');

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
    if (opts.create !== false) createPrivate(file);
    tightenLoose(file);
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

// Why 0600 whatever the umask: the store holds every node's keys, hostnames and receipts, and
// the catalog. SQLite gives the -wal and -shm files it makes the database file's own mode.
function createPrivate(file: string): void {
  let fd: number;
  try {
    fd = openSync(file, fsc.O_RDWR | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw err;
  }
  try {
    fchmodSync(fd, 0o600);
  } finally {
    closeSync(fd);
  }
}

// A store made group- or other-readable (by an older steward-control, or by hand) is made
// private again, through its open fd, and said so: leaving it readable would leave the data
// open to every account on the machine. What this process may not chmod is logged and left.
function tightenLoose(file: string): void {
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    let fd: number;
    try {
      fd = openSync(f, fsc.O_RDONLY | fsc.O_NONBLOCK);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile() || (st.mode & 0o077) === 0) continue;
      const mode = st.mode & 0o7777;
      try {
        fchmodSync(fd, mode & 0o700);
        log('made %s private: mode %s was readable or writable by group or others, now %s', f, mode.toString(8), (mode & 0o700).toString(8));
      } catch (err) {
        log('%s is mode %s, readable by group or others, and cannot be made private: %s', f, mode.toString(8), (err as Error).message);
      }
    } finally {
      closeSync(fd);
    }
  }
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
