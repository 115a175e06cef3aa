// How the PostgreSQL store's tables talk to the database: one function per shape of answer,
// bound to the connection of the transaction they run in.
type Scalar = string | number | boolean | null;
export type Param = Scalar | readonly Scalar[];

export interface Query {
  // Every row of `sql` with `$1, $2 ...` bound to `args`.
  rows<R>(sql: string, args?: Param[]): Promise<R[]>;
  // The first row, or null.
  one<R>(sql: string, args?: Param[]): Promise<R | null>;
  // How many rows the statement changed.
  count(sql: string, args?: Param[]): Promise<number>;
  // Runs `fn` as SQLite runs one statement: when it fails (a constraint), only its own writes
  // are undone and the transaction goes on, where PostgreSQL would abort the whole of it.
  guarded<T>(fn: () => Promise<T>): Promise<T>;
}

// The SQLSTATE of a unique violation, and whether `err` is one.
export const UNIQUE_VIOLATION = '23505';

export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string } | null;
  return e?.code === UNIQUE_VIOLATION && (constraint === undefined || e.constraint === constraint);
}
