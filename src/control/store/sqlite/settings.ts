import type { SettingReads, SettingWrites } from '../store.js';
import type { Prepare } from './prepare.js';

// The settings table: key, value.
export function sqliteSettings(q: Prepare): SettingReads & SettingWrites {
  return {
    async get(key) {
      return (q('SELECT value FROM settings WHERE key = ?').get(key) as { value: string } | undefined)?.value ?? null;
    },
    async set(key, value) {
      q('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(key, value);
    },
  };
}
