// `steward-control migrate` on PostgreSQL, and the check every instance makes when it opens the
// database. Migrations run only here, never in `serve` (docs/design.md §13): each in its own
// transaction with its row in steward_migrations, all under one advisory lock, so that two
// migrates started at once apply each migration once and a crash leaves one version or the next.
import type pg from 'pg';
import { StewardError } from '../../../core/errors.js';
import { logger } from '../../../platform/log.js';
import { PG_MIGRATIONS, PG_SCHEMA_RANGE, type PgMigration } from './schema.js';

const log = logger('control:store');

// The advisory lock key of `migrate` (any constant; "stewmigr" in ASCII, cut to 53 bits).
const MIGRATE_LOCK = 0x73746577_6d69;

export interface SchemaState {
  // The last migration applied (0: none), and the oldest steward-control schema it still serves.
  version: number;
  compatibleFrom: number;
}

export interface MigrateResult extends SchemaState {
  // The versions this call applied (none when the database was already there, or newer).
  applied: number[];
}

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS steward_migrations (
  version integer PRIMARY KEY,
  "compatibleFrom" integer NOT NULL,
  "appliedAt" bigint NOT NULL
)`;

// The database's schema as steward_migrations records it (version 0 when it has none).
export async function readSchemaState(client: pg.ClientBase): Promise<SchemaState> {
  const exists = await client.query<{ t: string | null }>(`SELECT to_regclass('steward_migrations')::text AS t`);
  if (exists.rows[0]?.t == null) return { version: 0, compatibleFrom: 0 };
  const r = await client.query<SchemaState>(`SELECT version, "compatibleFrom" FROM steward_migrations ORDER BY version DESC LIMIT 1`);
  return r.rows[0] ?? { version: 0, compatibleFrom: 0 };
}

// Brings the database to this steward-control's newest schema. Waits for a migrate running
// elsewhere (the lock), then applies what that one has not. A database past this version is
// left as it is.
export async function migratePostgres(client: pg.ClientBase, location: string): Promise<MigrateResult> {
  await client.query('SELECT pg_advisory_lock($1)', [MIGRATE_LOCK]);
  try {
    await client.query(CREATE_TABLE);
    const applied: number[] = [];
    for (;;) {
      await client.query('BEGIN');
      try {
        const state = await readSchemaState(client);
        const next = PG_MIGRATIONS.find((m) => m.version === state.version + 1);
        if (!next) {
          await client.query('COMMIT');
          if (state.version > PG_SCHEMA_RANGE.newest) log('database %s has schema version %d, newer than %d: nothing to migrate', location, state.version, PG_SCHEMA_RANGE.newest);
          return { ...state, applied };
        }
        await applyMigration(client, next);
        await client.query('COMMIT');
        applied.push(next.version);
        log('migrated %s to schema version %d', location, next.version);
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw new StewardError('STATE_INVALID', `migrating the control plane database ${location} failed: ${(err as Error).message}`, { cause: err });
      }
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATE_LOCK]).catch(() => undefined);
  }
}

async function applyMigration(client: pg.ClientBase, m: PgMigration): Promise<void> {
  await client.query(m.sql);
  await client.query(`INSERT INTO steward_migrations (version, "compatibleFrom", "appliedAt") VALUES ($1, $2, (extract(epoch FROM now()) * 1000)::bigint)`, [m.version, m.compatibleFrom]);
}

// Inside the caller's transaction (a restore's): waits for any migrate running elsewhere and
// keeps others out until that transaction ends, and makes sure the schema table exists.
export async function lockMigrationsInTx(client: pg.ClientBase): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATE_LOCK]);
  await client.query(CREATE_TABLE);
}

// Applies the migrations after version `from` up to `to`, inside the caller's transaction
// (under lockMigrationsInTx), so that they commit or roll back with what it writes.
export async function applyMigrationsInTx(client: pg.ClientBase, from: number, to: number): Promise<void> {
  for (const m of PG_MIGRATIONS) if (m.version > from && m.version <= to) await applyMigration(client, m);
}

// Refuses a database this steward-control cannot work on, naming its schema and our range.
export function checkSchemaState(state: SchemaState, location: string): void {
  const { oldest, newest } = PG_SCHEMA_RANGE;
  const range = `this steward-control works with schema versions ${oldest} to ${newest}`;
  if (state.version === 0) {
    throw new StewardError('STATE_INVALID', `control plane database ${location} has no steward schema; ${range}: run \`steward-control migrate --db <url>\` first`);
  }
  if (state.version < oldest) {
    throw new StewardError('STATE_INVALID', `control plane database ${location} has schema version ${state.version}, older than ${range}: run \`steward-control migrate\` with this steward-control`);
  }
  if (state.compatibleFrom > newest) {
    throw new StewardError(
      'STATE_INVALID',
      `control plane database ${location} has schema version ${state.version}, which needs a steward-control of schema ${state.compatibleFrom} or later; ${range}: use a newer steward-control`,
    );
  }
  if (state.version > newest) log('database %s has schema version %d, newer than %d but compatible from %d: using it', location, state.version, newest, state.compatibleFrom);
}
