import type Database from 'better-sqlite3';

// The prepared statement of `sql`, compiled once per connection: compiling it on every call was
// a quarter of a heartbeat's CPU. Callers must not change a statement's mode (pluck, raw, expand).
export type Prepare = (sql: string) => Database.Statement;

// JSON text from a column, or `fallback` when it does not parse (a row is never trusted blindly).
export function parseJson<T>(text: unknown, fallback: T): T {
  if (typeof text !== 'string') return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}
