// How the PostgreSQL store's tables talk to the database: one function per shape of answer,
// bound to the connection of the transaction they run in.
import type pg from 'pg';

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

// A Query on one connection of its own, inside the transaction its owner began (a snapshot's,
// a restore's): any failure is the owner's to roll back.
export function clientQuery(client: pg.ClientBase): Query {
  let savepoints = 0;
  const run = (sql: string, args: Param[] = []) => client.query(sql, args as unknown[]);
  return {
    rows: async (sql, args) => (await run(sql, args)).rows,
    one: async (sql, args) => (await run(sql, args)).rows[0] ?? null,
    count: async (sql, args) => (await run(sql, args)).rowCount ?? 0,
    guarded: async (fn) => {
      const name = `g${++savepoints}`;
      await run(`SAVEPOINT ${name}`);
      try {
        const r = await fn();
        await run(`RELEASE SAVEPOINT ${name}`);
        return r;
      } catch (err) {
        await run(`ROLLBACK TO SAVEPOINT ${name}`);
        await run(`RELEASE SAVEPOINT ${name}`);
        throw err;
      }
    },
  };
}
