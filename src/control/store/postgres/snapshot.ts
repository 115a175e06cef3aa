// A snapshot of a PostgreSQL store (../bulk.ts): one SERIALIZABLE READ ONLY DEFERRABLE
// transaction on a connection of its own. DEFERRABLE waits (briefly: the store's writes are
// short) for a snapshot no concurrent serializable write can make inconsistent, after which the
// transaction runs without serialization failures or predicate locks, however long the dump
// takes, while every instance goes on writing. Tables are read through a cursor, a batch at a time.
import type pg from 'pg';
import { StewardError } from '../../../core/errors.js';
import { orderTables, quoteIdent, type Scalar, type SequenceMark, type StoreSnapshot, type TableShape } from '../bulk.js';
import { readSchemaState } from './migrate.js';
import { openPgClient, pgFamilies, redactUrl } from './open-postgres-store.js';
import { clientQuery } from './query.js';

const BATCH = 1000;

// The store's tables in the connection's schema (steward_migrations is the backend's own).
export async function pgTableNames(client: pg.ClientBase): Promise<string[]> {
  const r = await client.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'steward_migrations'`,
  );
  return r.rows.map((x) => x.name);
}

// A table's columns in order, with their types.
export async function pgColumns(client: pg.ClientBase, table: string): Promise<Array<{ name: string; type: string; identity: boolean }>> {
  const r = await client.query<{ name: string; type: string; identity: string }>(
    `SELECT column_name AS name, data_type AS type, is_identity AS identity FROM information_schema.columns
     WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`,
    [table],
  );
  return r.rows.map((c) => ({ name: c.name, type: c.type, identity: c.identity === 'YES' }));
}

// Opens a snapshot of the store at `url` (STATE_INVALID when it has no steward schema).
export async function openPgSnapshot(url: string): Promise<StoreSnapshot> {
  const location = redactUrl(url);
  const c = await openPgClient(url);
  const { client } = c;
  let schemaVersion: number;
  let takenAt: number;
  let names: string[];
  try {
    await client.query('BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE');
    schemaVersion = (await readSchemaState(client)).version;
    if (schemaVersion === 0) throw new StewardError('STATE_INVALID', `control plane database ${location} has no steward schema`);
    takenAt = (await client.query<{ now: number }>('SELECT floor(extract(epoch FROM transaction_timestamp()) * 1000)::bigint AS now')).rows[0]!.now;
    names = await pgTableNames(client);
  } catch (err) {
    await c.end(err as Error);
    throw err instanceof StewardError ? err : new StewardError('IO_ERROR', `cannot read the control plane database ${location}: ${(err as Error).message}`, { cause: err });
  }
  let closed = false;
  return {
    backend: 'postgres',
    location,
    schemaVersion,
    takenAt,
    async tables() {
      const out: TableShape[] = [];
      for (const name of orderTables(names)) out.push({ name, columns: (await pgColumns(client, name)).map((x) => x.name) });
      return out;
    },
    async *rows(t: TableShape) {
      await client.query(`DECLARE steward_dump NO SCROLL CURSOR FOR SELECT ${t.columns.map(quoteIdent).join(', ')} FROM ${quoteIdent(t.name)}`);
      try {
        for (;;) {
          const r = await client.query<unknown[]>({ text: `FETCH ${BATCH} FROM steward_dump`, rowMode: 'array' });
          if (r.rows.length === 0) break;
          yield r.rows.map((row) => row.map((v, i) => scalarOf(v, location, t.name, t.columns[i] as string)));
        }
      } finally {
        // Why the catch: after a failed FETCH the transaction is aborted and CLOSE fails too;
        // the first error is the one to report.
        await client.query('CLOSE steward_dump').catch(() => undefined);
      }
    },
    async sequences(): Promise<SequenceMark[]> {
      const out: SequenceMark[] = [];
      for (const table of names) {
        for (const col of (await pgColumns(client, table)).filter((x) => x.identity)) {
          const r = await client.query<{ v: number | null }>(`SELECT pg_sequence_last_value(pg_get_serial_sequence($1, $2)::regclass) AS v`, [quoteIdent(table), col.name]);
          const v = r.rows[0]?.v ?? null;
          if (v !== null) out.push({ table, value: v });
        }
      }
      return out;
    },
    async releases() {
      return pgFamilies(clientQuery(client)).releases.list();
    },
    async close() {
      if (closed) return;
      closed = true;
      await client.query('COMMIT').catch(() => undefined);
      await c.end();
    },
  };
}

// A stored value as a Scalar: text, bigint (already a safe number, int8.ts), integer, boolean.
function scalarOf(v: unknown, location: string, table: string, column: string): Scalar {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  throw new StewardError('STATE_INVALID', `${location}: ${table}.${column} holds a value of a type no steward-control table holds (${typeof v})`);
}
