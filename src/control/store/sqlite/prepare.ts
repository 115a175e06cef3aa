import type Database from 'better-sqlite3';

// The prepared statement of `sql`, compiled once per connection: compiling it on every call was
// a quarter of a heartbeat's CPU. Callers must not change a statement's mode (pluck, raw, expand).
export type Prepare = (sql: string) => Database.Statement;
