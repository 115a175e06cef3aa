import type Database from 'better-sqlite3';

// The prepared statement of `sql`, compiled once per connection: compiling it on every call was
// a quarter of a heartbeat's CPU. Callers must not change a statement's mode (pluck, raw, expand).
export type Prepare = (sql: string) => Database.Statement;

// A Prepare over `db` that keeps each statement it compiled.
export function cachedPrepare(db: Database.Database): Prepare {
  const statements = new Map<string, Database.Statement>();
  return (sql) => {
    let st = statements.get(sql);
    if (!st) statements.set(sql, (st = db.prepare(sql)));
    return st;
  };
}
