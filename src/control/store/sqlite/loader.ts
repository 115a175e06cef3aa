// Loads rows into a new SQLite store (../bulk.ts). The target must not exist: the store is built
// in a temporary file beside it (the schema of the rows' version, the rows, the migrations after
// it), committed, fsynced, and only then linked to the target name, which fails if something
// took that name meanwhile. A failure leaves no file at the target.
import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { closeSync, constants as fsc, existsSync, fsyncSync, linkSync, openSync, rmSync } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../../../core/errors.js';
import { fsyncDir } from '../../../platform/fs-atomic.js';
import { quoteIdent, type LoadedTx, type Scalar, type SequenceMark, type StoreLoader } from '../bulk.js';
import { sqliteFamilies } from './open-sqlite-store.js';
import { cachedPrepare, type Prepare } from './prepare.js';
import { MIGRATIONS, STORE_SCHEMA_VERSION } from './schema.js';

// A loader into the SQLite file `file`, which must not exist yet (TARGET_NOT_EMPTY otherwise).
export function openSqliteLoader(file: string): StoreLoader {
  refuseExisting(file);
  const tmp = path.join(path.dirname(path.resolve(file)), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.restore`);
  let db: Database.Database | null = null;
  let version = 0;
  let done = false;
  let q: Prepare = () => {
    throw new Error('the loader has not begun');
  };
  const columnsOf = new Map<string, Set<string>>();
  const marks: SequenceMark[] = [];
  const open = (): Database.Database => {
    if (!db) throw new Error('the loader has not begun');
    return db;
  };
  const remove = () => {
    for (const f of [tmp, `${tmp}-journal`, `${tmp}-wal`, `${tmp}-shm`]) rmSync(f, { force: true });
  };

  return {
    backend: 'sqlite',
    location: file,
    newest: STORE_SCHEMA_VERSION,
    async begin(schemaVersion) {
      if (schemaVersion > STORE_SCHEMA_VERSION) throw new StewardError('STATE_INVALID', `schema version ${schemaVersion} is newer than ${STORE_SCHEMA_VERSION}, which this steward-control makes`);
      try {
        // Why 0600 through O_EXCL: the store holds every node's keys and receipts (as open-sqlite-store.ts).
        closeSync(openSync(tmp, fsc.O_RDWR | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600));
        db = new Database(tmp);
        q = cachedPrepare(db);
        db.pragma('synchronous = FULL');
        db.pragma('foreign_keys = ON');
        db.exec('BEGIN IMMEDIATE');
        for (let v = 0; v < schemaVersion; v++) (MIGRATIONS[v] as (d: Database.Database) => void)(db);
        version = schemaVersion;
      } catch (err) {
        db?.close();
        db = null;
        remove();
        throw new StewardError('IO_ERROR', `cannot create the control plane database ${file}: ${(err as Error).message}`, { cause: err });
      }
    },
    async insert(table, columns, rows) {
      const d = open();
      let known = columnsOf.get(table);
      if (!known) {
        // Only the store's own tables: never SQLite's (sqlite_master, sqlite_sequence).
        const ours = d.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ? AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'`).get(table) !== undefined;
        known = new Set(ours ? (d.pragma(`table_info(${quoteIdent(table)})`) as Array<{ name: string }>).map((c) => c.name) : []);
        columnsOf.set(table, known);
      }
      if (known.size === 0) throw new StewardError('BACKUP_INVALID', `table ${table} is not in schema version ${version} of the control plane database`);
      const unknown = columns.find((c) => !known.has(c));
      if (unknown !== undefined) throw new StewardError('BACKUP_INVALID', `column ${table}.${unknown} is not in schema version ${version} of the control plane database`);
      const st = q(`INSERT INTO ${quoteIdent(table)} (${columns.map(quoteIdent).join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`);
      try {
        for (const row of rows) st.run(...row.map(sqliteValue));
      } catch (err) {
        // The target was empty: rows that break its constraints are the rows' fault.
        if ((err as { code?: string }).code === 'SQLITE_FULL') throw new StewardError('DISK_FULL', `${file}: no space left while loading ${table}`, { cause: err });
        throw new StewardError('BACKUP_INVALID', `rows of ${table} do not load into schema version ${version}: ${(err as Error).message}`, { cause: err });
      }
    },
    async raiseSequence(mark) {
      marks.push(mark);
    },
    async commit<T>(settle: (tx: LoadedTx) => Promise<T>): Promise<T> {
      const d = open();
      for (const m of marks) raiseAutoincrement(d, m);
      for (let v = version; v < STORE_SCHEMA_VERSION; v++) (MIGRATIONS[v] as (x: Database.Database) => void)(d);
      d.pragma(`user_version = ${STORE_SCHEMA_VERSION}`);
      const at = Date.now();
      const r = await settle({ now: async () => at, ...sqliteFamilies(q) });
      d.exec('COMMIT');
      d.close();
      db = null;
      done = true;
      try {
        // The rows must be on disk before the name makes them the store.
        const fd = openSync(tmp, fsc.O_RDONLY);
        try {
          fsyncSync(fd);
        } finally {
          closeSync(fd);
        }
        refuseExisting(file);
        // Why link, not rename: rename would replace a store someone made at `file` meanwhile.
        linkSync(tmp, file);
      } catch (err) {
        remove();
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw targetExists(file);
        throw err;
      }
      remove();
      await fsyncDir(path.dirname(path.resolve(file)));
      return r;
    },
    async abort() {
      if (done) return;
      done = true;
      if (db) {
        if (db.inTransaction) db.exec('ROLLBACK');
        db.close();
        db = null;
      }
      remove();
    },
  };
}

// A value as better-sqlite3 binds it: booleans (a PostgreSQL store's) as SQLite keeps them, 0/1.
function sqliteValue(v: Scalar): string | number | null {
  return typeof v === 'boolean' ? (v ? 1 : 0) : v;
}

// Why: sqlite_sequence is where AUTOINCREMENT remembers the highest id it handed out; inserting
// rows with their ids raised it to the highest present, and the snapshot's mark may be above.
function raiseAutoincrement(db: Database.Database, m: SequenceMark): void {
  const sql = db.prepare(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`).pluck().get(m.table) as string | undefined;
  if (!sql || !/AUTOINCREMENT/i.test(sql)) return;
  const raised = db.prepare('UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?').run(m.value, m.table);
  if (raised.changes === 0) db.prepare('INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)').run(m.table, m.value);
}

// Why the -wal and -shm files too: SQLite would replay an earlier database's WAL into the new one.
function refuseExisting(file: string): void {
  for (const f of [file, `${file}-wal`, `${file}-shm`]) if (existsSync(f)) throw targetExists(f);
}

function targetExists(f: string): StewardError {
  return new StewardError('TARGET_NOT_EMPTY', `${f} exists: a restore or copy onto SQLite makes a new database file; move it away or name another --db`);
}
