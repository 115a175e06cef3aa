// The SQLite implementation of the store contract (../store.ts), on better-sqlite3. Several
// processes (serve and CLI commands) may open one file at once: WAL lets readers run beside a
// writer, busy_timeout waits for the write lock.
//
// better-sqlite3 is synchronous and one connection has one transaction at a time, so this
// process's transactions are serialized here: each waits for the one before to commit or roll
// back, however many awaits it holds, and none sees another's uncommitted writes.
import Database from 'better-sqlite3';
import { closeSync, existsSync, fchmodSync, fstatSync, openSync, constants as fsc } from 'node:fs';
import { StewardError } from '../../../core/errors.js';
import { systemClock, type Clock } from '../../../platform/clock.js';
import { logger } from '../../../platform/log.js';
import { TransactionAbortedError, type ControlStore, type StoreTx } from '../store.js';
import { createCommitSync } from './commit-sync.js';
import { sqliteAudit } from './audit.js';
import { sqliteAuthFailures } from './auth-failures.js';
import { sqliteNodes } from './nodes.js';
import { sqliteOperators } from './operators.js';
import { cachedPrepare, type Prepare } from './prepare.js';
import { sqliteReceipts } from './receipts.js';
import { sqliteReleases } from './releases.js';
import { sqliteRuns } from './runs.js';
import { MIGRATIONS, STORE_SCHEMA_VERSION } from './schema.js';
import { sqliteSessions } from './sessions.js';
import { sqliteSettings } from './settings.js';
import { sqliteTokens } from './tokens.js';
import { sqlitePins } from './pins.js';
import { sqliteTargets } from './targets.js';
import { sqliteHooks } from './hooks.js';
import { sqliteSignals } from './signals.js';
import { sqliteTrust } from './trust.js';

const log = logger('control:store');

// The SQLite store, with what only SQLite has: its connection and file (for the WAL's fsync,
// the artifacts folder beside it, and tests that read rows).
export interface SqliteStore extends ControlStore {
  readonly db: Database.Database;
  readonly file: string;
}

export interface SqliteStoreOptions {
  // Create the file when it does not exist (`steward-control init`, `serve --init`). Otherwise a
  // missing file is refused with STATE_INVALID, so a typo in --db never makes an empty fleet.
  create?: boolean;
  // The store's clock (docs/design.md §11: decisions use it). Default: the system clock.
  clock?: Pick<Clock, 'now'>;
  // The server's way to commit: synchronous=NORMAL and an fdatasync of the WAL in the thread
  // pool, shared by the commits made meanwhile (commit-sync.ts); durable() waits for it. Without
  // it every COMMIT fsyncs (synchronous=FULL) and durable() resolves at once. `sync` is a test seam.
  groupSync?: boolean | { sync?: () => Promise<void> };
  // How often a store with node-wake listeners looks for commits by another process (a
  // `steward-control --db FILE` command beside `serve`); default EXTERNAL_WAKE_MS. Tests.
  externalWakeMs?: number;
}

// Another process's commit is looked for this often (PRAGMA data_version, one cheap read): what it
// changed reaches the nodes' wake-up waits within it (docs/design.md §18).
export const EXTERNAL_WAKE_MS = 500;

// Opens the store at `file`, migrating an older schema. A store whose user_version is newer
// than this steward-control knows is refused with STATE_INVALID.
export function openSqliteStore(file: string, opts: SqliteStoreOptions = {}): SqliteStore {
  if (!opts.create && !existsSync(file)) {
    throw new StewardError('STATE_INVALID', `control plane database ${file} does not exist; create it with \`steward-control init --db ${file}\` (or \`serve --init\`), or pass the right --db`);
  }
  let db: Database.Database;
  try {
    if (opts.create) createPrivate(file);
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
  const clock = opts.clock ?? systemClock;
  const q = cachedPrepare(db);
  const families = sqliteFamilies(q);
  // Transaction control through prepared statements: parsing BEGIN, SAVEPOINT and COMMIT anew
  // for every heartbeat of a batch was a measurable part of its cost. One savepoint name serves
  // nested ones too: ROLLBACK TO and RELEASE act on the innermost of that name.
  const savepoint = async <T>(fn: () => Promise<T>): Promise<T> => {
    q('SAVEPOINT sp').run();
    try {
      const r = await fn();
      q('RELEASE sp').run();
      return r;
    } catch (err) {
      // Why: some errors (I/O, disk full) make SQLite roll back the whole transaction; then
      // nothing of it can commit, and the caller must know.
      if (!db.inTransaction) throw new TransactionAbortedError(err);
      q('ROLLBACK TO sp').run();
      q('RELEASE sp').run();
      throw err;
    }
  };

  const wakeListeners = new Set<() => void>();
  const nodeWakeListeners = new Set<(nodeIds: readonly string[]) => void>();
  let tail: Promise<unknown> = Promise.resolve();
  const serialize = <T>(fn: () => Promise<T>): Promise<T> => {
    const result = tail.then(fn);
    tail = result.catch(() => undefined);
    return result;
  };
  const inTransaction = <T>(begin: string, fn: (tx: StoreTx) => Promise<T>): Promise<T> =>
    serialize(async () => {
      q(begin).run();
      const at = clock.now();
      let wake = false;
      const woken = new Set<string>();
      const tx: StoreTx = {
        now: async () => at, ...families, savepoint, wakeRollouts: async () => void (wake = true),
        wakeNodes: async (ids) => {
          for (const id of ids) woken.add(id);
        },
      };
      try {
        const r = await fn(tx);
        q('COMMIT').run();
        // Why on the next turn: a listener's failure is not this committed transaction's.
        if (wake) for (const l of wakeListeners) queueMicrotask(l);
        if (woken.size > 0) {
          const ids = [...woken];
          for (const l of nodeWakeListeners) queueMicrotask(() => l(ids));
        }
        return r;
      } catch (err) {
        if (db.inTransaction) q('ROLLBACK').run();
        throw err;
      }
    });

  // Commits by another process (a CLI beside `serve`: SQLite has one instance, and no NOTIFY):
  // which nodes they changed is not known here, so every enrolled node is woken, as if each had
  // been named (the wait registry keeps a wake briefly for a node between two waits). Such commits
  // are an operator's commands, seldom: the cost is one early heartbeat per node. PRAGMA
  // data_version changes only for another connection's commits, never this one's.
  let external: NodeJS.Timeout | null = null;
  const watchOtherProcesses = () => {
    if (external) return;
    let seen = Number(db.pragma('data_version', { simple: true }));
    external = setInterval(() => {
      void serialize(async () => {
        const now = Number(db.pragma('data_version', { simple: true }));
        if (now === seen) return;
        seen = now;
        if (nodeWakeListeners.size === 0) return;
        const ids = (q('SELECT nodeId FROM nodes').pluck().all() as string[]).filter((id) => typeof id === 'string');
        if (ids.length > 0) for (const l of nodeWakeListeners) queueMicrotask(() => l(ids));
      }).catch(() => undefined);
    }, opts.externalWakeMs ?? EXTERNAL_WAKE_MS);
    external.unref();
  };

  const group = opts.groupSync ? createCommitSync({ db, file }, typeof opts.groupSync === 'object' ? opts.groupSync : {}) : null;
  let closed: Promise<void> | null = null;
  return {
    db,
    file,
    location: file,
    write: (fn) => inTransaction('BEGIN IMMEDIATE', fn),
    read: (fn) => inTransaction('BEGIN', fn),
    durable: group ? group.durable : () => Promise.resolve(),
    onRolloutWake: (listener) => {
      wakeListeners.add(listener);
      return () => void wakeListeners.delete(listener);
    },
    onNodeWake: (listener) => {
      nodeWakeListeners.add(listener);
      watchOtherProcesses();
      return () => void nodeWakeListeners.delete(listener);
    },
    close: () =>
      (closed ??= serialize(async () => {
        if (external) clearInterval(external);
        external = null;
        await group?.close();
        db.close();
      })),
  };
}

// The store's tables over one connection's prepared statements (the store's own, or a restore's).
export function sqliteFamilies(q: Prepare): Omit<StoreTx, 'now' | 'savepoint' | 'wakeRollouts' | 'wakeNodes'> {
  return {
    nodes: sqliteNodes(q),
    receipts: sqliteReceipts(q),
    runs: sqliteRuns(q),
    releases: sqliteReleases(q),
    tokens: sqliteTokens(q),
    settings: sqliteSettings(q),
    operators: sqliteOperators(q),
    sessions: sqliteSessions(q),
    authFailures: sqliteAuthFailures(q),
    audit: sqliteAudit(q),
    targets: sqliteTargets(q),
    pins: sqlitePins(q),
    hooks: sqliteHooks(q),
    signals: sqliteSignals(q),
    trust: sqliteTrust(q),
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
    for (let v = version; v < STORE_SCHEMA_VERSION; v++) (MIGRATIONS[v] as (d: Database.Database) => void)(db);
    if (version !== STORE_SCHEMA_VERSION) db.pragma(`user_version = ${STORE_SCHEMA_VERSION}`);
  }).immediate();
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
