// Loads rows into an empty PostgreSQL store (../bulk.ts) in ONE transaction, DDL included
// (PostgreSQL's DDL is transactional): under migrate's lock, the schema of the rows' version,
// the rows, the identity sequences raised past them, the migrations after that version, the
// caller's settling, COMMIT. A failure anywhere rolls all of it back: the database is as it was.
// An empty target is a database without a steward schema, or with one whose tables hold no row
// at a version at most the rows' (an older one is migrated up to it first).
import type pg from 'pg';
import { StewardError } from '../../../core/errors.js';
import { quoteIdent, type LoadedTx, type Scalar, type SequenceMark, type StoreLoader } from '../bulk.js';
import { applyMigrationsInTx, lockMigrationsInTx, readSchemaState } from './migrate.js';
import { openPgClient, pgFamilies, redactUrl } from './open-postgres-store.js';
import { clientQuery } from './query.js';
import { PG_SCHEMA_RANGE } from './schema.js';
import { pgColumns, pgTableNames } from './snapshot.js';

// PostgreSQL binds at most 65,535 parameters in one statement.
const MAX_PARAMS = 60_000;
const MAX_ROWS = 1000;

// A loader into the database at `url`.
export async function openPgLoader(url: string): Promise<StoreLoader> {
  const location = redactUrl(url);
  const c = await openPgClient(url);
  const { client } = c;
  let version = 0;
  let open = false;
  let done = false;
  const shapes = new Map<string, Map<string, { type: string; identity: boolean }>>();
  const marks = new Map<string, number>();
  let tables: Set<string> | null = null;
  // The columns of one of the store's tables (none for any other table: steward_migrations,
  // another schema's).
  const shapeOf = async (table: string) => {
    tables ??= new Set(await pgTableNames(client));
    if (!tables.has(table)) return new Map<string, { type: string; identity: boolean }>();
    let s = shapes.get(table);
    if (!s) shapes.set(table, (s = new Map((await pgColumns(client, table)).map((x) => [x.name, { type: x.type, identity: x.identity }]))));
    return s;
  };
  const fail = async (err: unknown) => {
    done = true;
    if (open) await client.query('ROLLBACK').catch(() => undefined);
    open = false;
    await c.end(err instanceof Error && !(err instanceof StewardError) ? err : undefined);
  };

  return {
    backend: 'postgres',
    location,
    newest: PG_SCHEMA_RANGE.newest,
    async begin(schemaVersion) {
      if (schemaVersion > PG_SCHEMA_RANGE.newest) throw new StewardError('STATE_INVALID', `schema version ${schemaVersion} is newer than ${PG_SCHEMA_RANGE.newest}, which this steward-control makes`);
      try {
        await client.query('BEGIN');
        open = true;
        await lockMigrationsInTx(client);
        const state = await readSchemaState(client);
        const present = await pgTableNames(client);
        if (state.version === 0 && present.length > 0) {
          throw new StewardError('TARGET_NOT_EMPTY', `database ${location} holds tables (${present.slice(0, 5).join(', ')}) but no steward schema: restore or copy into an empty database`);
        }
        const holding: string[] = [];
        for (const t of present) if ((await client.query(`SELECT EXISTS (SELECT 1 FROM ${quoteIdent(t)}) AS x`)).rows[0].x) holding.push(t);
        if (holding.length > 0) throw new StewardError('TARGET_NOT_EMPTY', `database ${location} holds steward-control data (rows in ${holding.join(', ')}): restore and copy write only into an empty one`);
        if (state.version > schemaVersion) {
          throw new StewardError(
            'STATE_INVALID',
            `database ${location} has an empty steward schema of version ${state.version}, newer than the rows' ${schemaVersion}, which must go through the migrations after ${schemaVersion}: restore into a database without a steward schema (this one holds no row: dropping and creating it again loses nothing)`,
          );
        }
        await applyMigrationsInTx(client, state.version, schemaVersion);
        version = schemaVersion;
      } catch (err) {
        await fail(err);
        throw err instanceof StewardError ? err : new StewardError('IO_ERROR', `preparing the control plane database ${location} failed: ${(err as Error).message}`, { cause: err });
      }
    },
    async insert(table, columns, rows) {
      const shape = await shapeOf(table);
      if (shape.size === 0) throw new StewardError('BACKUP_INVALID', `table ${table} is not in schema version ${version} of the control plane database`);
      const unknown = columns.find((col) => !shape.has(col));
      if (unknown !== undefined) throw new StewardError('BACKUP_INVALID', `column ${table}.${unknown} is not in schema version ${version} of the control plane database`);
      const types = columns.map((col) => shape.get(col)!.type);
      const per = Math.max(1, Math.min(MAX_ROWS, Math.floor(MAX_PARAMS / Math.max(1, columns.length))));
      const head = `INSERT INTO ${quoteIdent(table)} (${columns.map(quoteIdent).join(', ')}) VALUES `;
      for (let i = 0; i < rows.length; i += per) {
        const chunk = rows.slice(i, i + per);
        const args: Scalar[] = [];
        const tuples = chunk.map((row) => `(${row.map((v, j) => (args.push(pgValue(v, types[j] as string, table, columns[j] as string)), `$${args.length}`)).join(', ')})`);
        try {
          await client.query(head + tuples.join(', '), args);
        } catch (err) {
          // The target was empty: rows that break a constraint (class 23) or a type (22) are the rows' fault.
          const code = (err as { code?: string }).code ?? '';
          if (code.startsWith('22') || code.startsWith('23')) throw new StewardError('BACKUP_INVALID', `rows of ${table} do not load into schema version ${version}: ${(err as Error).message}`, { cause: err });
          throw err;
        }
      }
    },
    async raiseSequence(mark: SequenceMark) {
      marks.set(mark.table, Math.max(marks.get(mark.table) ?? 0, mark.value));
    },
    async commit<T>(settle: (tx: LoadedTx) => Promise<T>): Promise<T> {
      // Why every identity column, marked or not: rows inserted with their ids leave the
      // sequence where it was, and the next insert would collide with a loaded id.
      for (const table of await pgTableNames(client)) {
        for (const [col, s] of await shapeOf(table)) {
          if (!s.identity) continue;
          const max = (await client.query<{ m: number | null }>(`SELECT max(${quoteIdent(col)}) AS m FROM ${quoteIdent(table)}`)).rows[0]?.m ?? 0;
          const to = Math.max(max, marks.get(table) ?? 0);
          if (to >= 1) await client.query('SELECT setval(pg_get_serial_sequence($1, $2), $3, true)', [quoteIdent(table), col, to]);
        }
      }
      shapes.clear();
      tables = null;
      await applyMigrationsInTx(client, version, PG_SCHEMA_RANGE.newest);
      const q = clientQuery(client);
      const at = (await q.one<{ now: number }>('SELECT floor(extract(epoch FROM transaction_timestamp()) * 1000)::bigint AS now'))!.now;
      const r = await settle({ now: async () => at, ...pgFamilies(q) });
      const committed = await client.query('COMMIT');
      open = false;
      done = true;
      await c.end();
      if (committed.command !== 'COMMIT') throw new StewardError('IO_ERROR', `the load into ${location} was rolled back by the database at COMMIT`);
      return r;
    },
    async abort() {
      if (done) return;
      await fail(undefined);
    },
  };
}

// A value as the column takes it: a SQLite store's 0/1 into a boolean column.
function pgValue(v: Scalar, type: string, table: string, column: string): Scalar {
  if (type !== 'boolean' || typeof v !== 'number') return v;
  if (v !== 0 && v !== 1) throw new StewardError('BACKUP_INVALID', `${table}.${column} is a boolean, not ${v}`);
  return v === 1;
}
