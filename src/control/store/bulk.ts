// Whole-store copies (docs/design.md §13, "Backups"): a consistent snapshot of every table of a store,
// read in one transaction, and a loader that writes such rows into an empty store in one
// transaction. Rows travel as they are stored (column names are the same on both backends, by
// schema version), so a snapshot of either backend loads into either. ../backup/ builds
// `backup`, `restore` and `copy` on these; each backend implements them beside its store
// (sqlite/snapshot.ts, sqlite/loader.ts, postgres/snapshot.ts, postgres/loader.ts).
import type { ReleaseRow, StoreTx } from './store.js';

// A stored value as it travels: text, a safe integer, a boolean (PostgreSQL's; SQLite stores
// 0/1, and each loader converts to what its column holds), or null.
export type Scalar = string | number | boolean | null;

export interface TableShape {
  name: string;
  columns: string[];
}

// The highest id a table's generated column ever handed out, so that a load never hands it
// out again (SQLite's AUTOINCREMENT, PostgreSQL's identity columns).
export interface SequenceMark {
  table: string;
  value: number;
}

export interface StoreSnapshot {
  readonly backend: 'sqlite' | 'postgres';
  // The database, for messages (a file name, or a URL without its password).
  readonly location: string;
  // The schema version of the store the snapshot holds.
  readonly schemaVersion: number;
  // When the snapshot was taken, on the store's clock (epoch ms).
  readonly takenAt: number;
  // Every table but the backend's own bookkeeping, each before those that reference it.
  tables(): Promise<TableShape[]>;
  // The rows of one table, in batches, each row's values in `t.columns`' order. One table at a
  // time: a batch iteration must end before the next call.
  rows(t: TableShape): AsyncIterable<Scalar[][]>;
  sequences(): Promise<SequenceMark[]>;
  // The catalog as the snapshot holds it (the kept tarballs to take along).
  releases(): Promise<ReleaseRow[]>;
  // Ends the snapshot's transaction and closes its connection. Idempotent.
  close(): Promise<void>;
}

// The store's tables within the load's transaction, at the newest schema.
export type LoadedTx = Omit<StoreTx, 'savepoint' | 'wakeRollouts' | 'wakeNodes'>;

export interface StoreLoader {
  readonly backend: 'sqlite' | 'postgres';
  readonly location: string;
  // The newest schema version this steward-control makes.
  readonly newest: number;
  // Opens the load's one transaction on the target at schema version `schemaVersion` (at most
  // `newest`). Refused TARGET_NOT_EMPTY when the target holds data (nothing written then).
  begin(schemaVersion: number): Promise<void>;
  // Inserts rows into a table of that schema; a table or column it does not have is BACKUP_INVALID.
  insert(table: string, columns: string[], rows: Scalar[][]): Promise<void>;
  // Raises a table's generated ids to at least `mark.value` (at commit, after every insert).
  raiseSequence(mark: SequenceMark): Promise<void>;
  // Migrates the loaded rows to the newest schema, runs `settle` over them, and commits: the
  // target then shows all of it, never part. A throw leaves it for abort().
  commit<T>(settle: (tx: LoadedTx) => Promise<T>): Promise<T>;
  // Undoes everything begin() and insert() wrote. Idempotent; nothing after a commit.
  abort(): Promise<void>;
}

// The store's tables that others reference come first; a table this list does not name (a
// newer schema's, which restores refuse anyway) goes after them by name.
const TABLE_ORDER = ['settings', 'tokens', 'nodes', 'releases', 'app_keys', 'downgrades', 'runs', 'run_nodes', 'issued', 'receipts', 'operators', 'sessions', 'auth_failures', 'audit', 'targets', 'run_owners', 'pins', 'signal_samples', 'hooks', 'hook_deliveries', 'hook_marks', 'trust_metadata', 'trust_keys', 'trust_pending_keys', 'trust_pending'];

// `names` in load order.
export function orderTables(names: readonly string[]): string[] {
  const rank = (n: string) => {
    const i = TABLE_ORDER.indexOf(n);
    return i < 0 ? TABLE_ORDER.length : i;
  };
  return [...names].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}

// A table or column name as a quoted SQL identifier (the same on both backends).
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
