import type { SettingReads, SettingWrites } from '../store.js';
import type { Query } from './query.js';

// The settings table: key, value.
export function pgSettings(q: Query): SettingReads & SettingWrites {
  return {
    async get(key) {
      return (await q.one<{ value: string }>('SELECT value FROM settings WHERE key = $1', [key]))?.value ?? null;
    },
    async set(key, value) {
      await q.count('INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [key, value]);
    },
  };
}
