// Runs a suite of store tests once per backend (docs/design.md §13: one store contract, one test suite
// on both): SQLite in a mkdtemp folder, and PostgreSQL on this file's own throwaway cluster
// (test/helpers/postgres.ts), a fresh migrated database per open(). Without PostgreSQL its
// suite is skipped with the reason printed, except under CI=true, where it fails.
import { after, describe } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Clock } from '../../src/platform/clock.js';
import { migrateStore, openStore } from '../../src/control/store/open-store.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { postgresMissing, startPostgresCluster, type PgCluster } from './postgres.js';

export interface StoreBackend {
  name: 'sqlite' | 'postgres';
  // A new database with the current schema; its --db value.
  createDatabase(): Promise<string>;
  // A store on a new database, on `clock` when given.
  open(opts?: { clock?: Pick<Clock, 'now'> }): Promise<ControlStore>;
  // A --db value naming nothing yet: a SQLite file that does not exist, a PostgreSQL database
  // without a schema (what restore and copy write into).
  emptyTarget(): Promise<string>;
}

let cluster: Promise<PgCluster> | null = null;
const dirs: string[] = [];
let registered = false;

function teardown(): void {
  if (registered) return;
  registered = true;
  after(async () => {
    await (await cluster?.catch(() => null))?.stop();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
}

const sqlite: StoreBackend = {
  name: 'sqlite',
  async createDatabase() {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-store-'));
    dirs.push(dir);
    const file = path.join(dir, 'control.db');
    await migrateStore(file, { create: true });
    return file;
  },
  async open(opts = {}) {
    return openStore(await this.createDatabase(), opts);
  },
  async emptyTarget() {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-store-'));
    dirs.push(dir);
    return path.join(dir, 'control.db');
  },
};

const postgres: StoreBackend = {
  name: 'postgres',
  async createDatabase() {
    const url = await this.emptyTarget();
    await migrateStore(url);
    return url;
  },
  async open(opts = {}) {
    return openStore(await this.createDatabase(), opts);
  },
  async emptyTarget() {
    const missing = postgresMissing();
    if (missing) throw new Error(`CI=true, so the PostgreSQL store tests must run, but: ${missing}`);
    return (await (cluster ??= startPostgresCluster())).createDatabase();
  },
};

// The backend that is not `b` (a backup of one restored onto the other); null without PostgreSQL
// outside CI (the reason printed).
export function otherBackend(b: StoreBackend): StoreBackend | null {
  if (b.name === 'postgres') return sqlite;
  const missing = postgresMissing();
  if (missing && process.env.CI !== 'true') {
    console.log(`skipping the restore onto PostgreSQL: ${missing}`);
    return null;
  }
  return postgres;
}

// Declares `suite` in a describe block per backend, named after it.
export function describeEachBackend(suite: (backend: StoreBackend) => void): void {
  teardown();
  describe('on sqlite', () => suite(sqlite));
  describePostgres(suite);
}

// Declares `suite` on PostgreSQL only (what only it has: several instances on one database, its
// schema table, its clock).
export function describePostgres(suite: (backend: StoreBackend) => void): void {
  teardown();
  const missing = postgresMissing();
  if (missing && process.env.CI !== 'true') {
    console.log(`skipping the PostgreSQL store tests: ${missing}`);
    describe('on postgres', { skip: missing }, () => suite(postgres));
  } else {
    describe('on postgres', () => suite(postgres));
  }
}
