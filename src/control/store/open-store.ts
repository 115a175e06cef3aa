// The one way the programs open a store (docs/design.md §13): `--db` is a SQLite file, or a
// `postgres://` (`postgresql://`) URL. The PostgreSQL store and pg are imported only for a URL:
// a SQLite command or server does not load them (pg alone takes about 65 ms to import unbundled
// on Node 20 here; bundled, a SQLite `steward-control nodes` used 176 ms of CPU instead of 199).
import { existsSync } from 'node:fs';
import { StewardError } from '../../core/errors.js';
import type { Clock } from '../../platform/clock.js';
import type { StoreLoader, StoreSnapshot } from './bulk.js';
import { isPostgresUrl, redactUrl } from './postgres/url.js';
import { openSqliteLoader } from './sqlite/loader.js';
import { openSqliteStore } from './sqlite/open-sqlite-store.js';
import { openSqliteSnapshot } from './sqlite/snapshot.js';
import { STORE_SCHEMA_VERSION } from './sqlite/schema.js';
import type { ControlStore } from './store.js';

export interface OpenStoreOptions {
  // SQLite: create the file when it does not exist (`init`, `serve --init`). PostgreSQL has no
  // such thing: its schema is made by `migrate`, never by opening a store.
  create?: boolean;
  // The server's group commit (SQLite only: a PostgreSQL COMMIT is durable when it returns).
  groupSync?: boolean;
  // Test seam: the store's clock instead of the system's (SQLite) or the database's (PostgreSQL).
  clock?: Pick<Clock, 'now'>;
}

// Opens the store `spec` names.
export async function openStore(spec: string, opts: OpenStoreOptions = {}): Promise<ControlStore> {
  if (!isPostgresUrl(spec)) return openSqliteStore(spec, opts);
  if (opts.create) {
    throw new StewardError('USAGE', `a PostgreSQL database (${redactUrl(spec)}) is created by \`steward-control migrate\`, never by serve: run \`steward-control migrate --db <url>\` first`);
  }
  const { openPostgresStore } = await import('./postgres/open-postgres-store.js');
  return openPostgresStore(spec, { clock: opts.clock });
}

export interface MigrateOutcome {
  // The database, without its password.
  db: string;
  // Whether it had no schema before.
  created: boolean;
  schemaVersion: number;
  // The migrations this call applied (SQLite migrates as it opens and does not tell).
  applied?: number[];
}

// `steward-control migrate` and `init`: brings the database to this steward-control's newest
// schema. SQLite: creates the file when `create` (init). PostgreSQL: under an advisory lock, the
// migrations another migrate has not applied.
export async function migrateStore(spec: string, opts: { create?: boolean } = {}): Promise<MigrateOutcome> {
  if (isPostgresUrl(spec)) {
    const { migratePostgresAt } = await import('./postgres/open-postgres-store.js');
    const r = await migratePostgresAt(spec);
    return { db: redactUrl(spec), created: r.applied.includes(1), schemaVersion: r.version, applied: r.applied };
  }
  const created = !existsSync(spec);
  await openSqliteStore(spec, { create: opts.create === true }).close();
  return { db: spec, created, schemaVersion: STORE_SCHEMA_VERSION };
}

// A consistent snapshot of every table of the store `spec` names (backup, copy).
export async function openSnapshot(spec: string): Promise<StoreSnapshot> {
  return isPostgresUrl(spec) ? (await import('./postgres/snapshot.js')).openPgSnapshot(spec) : openSqliteSnapshot(spec);
}

// A loader into the empty store `spec` names (restore, copy).
export async function openLoader(spec: string): Promise<StoreLoader> {
  return isPostgresUrl(spec) ? (await import('./postgres/loader.js')).openPgLoader(spec) : openSqliteLoader(spec);
}
