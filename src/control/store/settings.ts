import type { ControlStore } from './open-store.js';

export const DEFAULT_HEARTBEAT_SECONDS = 30;

// A setting's value, or null when it was never written.
export function readSetting(store: ControlStore, key: string): string | null {
  const row = store.prepare('SELECT value FROM settings WHERE key = ?').get(key) as { value: string } | undefined;
  return row?.value ?? null;
}

// Writes a setting (insert or replace).
export function writeSetting(store: ControlStore, key: string, value: string): void {
  store.prepare('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(key, value);
}

// The heartbeat interval nodes are told (serve's --heartbeat-seconds), default 30 s.
export function readHeartbeatSeconds(store: ControlStore): number {
  const n = Number(readSetting(store, 'heartbeatSeconds'));
  return Number.isInteger(n) && n > 0 ? n : DEFAULT_HEARTBEAT_SECONDS;
}
