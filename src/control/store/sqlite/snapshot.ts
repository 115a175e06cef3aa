// A snapshot of a SQLite store (../bulk.ts): one read transaction on a read-only connection of
// its own. In WAL mode the first read fixes what every later read of that transaction sees,
// while serve and other commands go on writing beside it.
import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { StewardError } from '../../../core/errors.js';
import { orderTables, quoteIdent, type Scalar, type SequenceMark, type StoreSnapshot, type TableShape } from '../bulk.js';
import { sqliteFamilies } from './open-sqlite-store.js';
import { cachedPrepare } from './prepare.js';

const BATCH = 1000;

// Opens a snapshot of the store at `file` (STATE_INVALID when it does not exist).
export function openSqliteSnapshot(file: string): StoreSnapshot {
  if (!existsSync(file)) throw new StewardError('STATE_INVALID', `control plane database ${file} does not exist`);
  let db: Database.Database;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    db.pragma('busy_timeout = 5000');
  } catch (err) {
    throw new StewardError('IO_ERROR', `cannot open the control plane database ${file}: ${(err as Error).message}`, { cause: err });
  }
  let names: string[];
  let schemaVersion: number;
  try {
    db.exec('BEGIN');
    // The transaction's first read: the snapshot starts here.
    names = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'`).pluck().all() as string[];
    schemaVersion = db.pragma('user_version', { simple: true }) as number;
  } catch (err) {
    db.close();
    throw new StewardError('IO_ERROR', `cannot read the control plane database ${file}: ${(err as Error).message}`, { cause: err });
  }
  if (schemaVersion === 0 || names.length === 0) {
    db.close();
    throw new StewardError('STATE_INVALID', `${file} is not a steward-control database (it has no schema version)`);
  }
  const takenAt = Date.now();
  let closed = false;
  return {
    backend: 'sqlite',
    location: file,
    schemaVersion,
    takenAt,
    async tables() {
      return orderTables(names).map((name) => ({ name, columns: (db.pragma(`table_info(${quoteIdent(name)})`) as Array<{ name: string }>).map((c) => c.name) }));
    },
    async *rows(t: TableShape) {
      const cols = t.columns.map(quoteIdent).join(', ');
      const st = db.prepare(`SELECT ${cols} FROM ${quoteIdent(t.name)} ORDER BY rowid`).raw(true).safeIntegers(true);
      let batch: Scalar[][] = [];
      for (const row of st.iterate() as Iterable<unknown[]>) {
        batch.push(row.map((v, i) => scalarOf(v, file, t.name, t.columns[i] as string)));
        if (batch.length >= BATCH) {
          yield batch;
          batch = [];
        }
      }
      if (batch.length > 0) yield batch;
    },
    async sequences(): Promise<SequenceMark[]> {
      if (!db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'`).get()) return [];
      const rows = db.prepare('SELECT name, seq FROM sqlite_sequence').all() as Array<{ name: string; seq: number }>;
      return rows.filter((r) => names.includes(r.name)).map((r) => ({ table: r.name, value: r.seq }));
    },
    async releases() {
      return sqliteFamilies(cachedPrepare(db)).releases.list();
    },
    async close() {
      if (closed) return;
      closed = true;
      db.close();
    },
  };
}

// A stored value as a Scalar: SQLite's integers (read as bigint so that none is rounded) must be
// safe integers; a REAL or a BLOB is no value of this schema.
function scalarOf(v: unknown, file: string, table: string, column: string): Scalar {
  if (v === null || typeof v === 'string') return v;
  if (typeof v === 'bigint') {
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) {
      throw new StewardError('STATE_INVALID', `${file}: ${table}.${column} holds the integer ${v}, beyond Number.MAX_SAFE_INTEGER: refused rather than rounded`);
    }
    return Number(v);
  }
  throw new StewardError('STATE_INVALID', `${file}: ${table}.${column} holds a ${typeof v === 'number' ? 'REAL' : 'BLOB'} value, which no steward-control table holds`);
}
