import type { Command } from 'commander';
import { StewardError } from '../../core/errors.js';
import { openStore, type ControlStore } from '../store/open-store.js';

export interface ControlGlobals {
  db?: string;
  json?: boolean;
}

// The database file from --db or STEWARD_CONTROL_DB.
export function dbFileOf(cmd: Command): string {
  const db = cmd.optsWithGlobals<ControlGlobals>().db ?? process.env.STEWARD_CONTROL_DB;
  if (!db) throw new StewardError('USAGE', 'no database: pass --db FILE or set STEWARD_CONTROL_DB');
  return db;
}

// Whether --json was given.
export function jsonOf(cmd: Command): boolean {
  return cmd.optsWithGlobals<ControlGlobals>().json === true;
}

// Runs `fn` with the store open, and closes it after.
export async function withStore<T>(cmd: Command, fn: (store: ControlStore) => T | Promise<T>): Promise<T> {
  const store = openStore(dbFileOf(cmd));
  try {
    return await fn(store);
  } finally {
    store.close();
  }
}
