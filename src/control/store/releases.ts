import type { Envelope } from '../../core/release-schemas.js';
import type { ControlStore } from './open-store.js';

export interface ReleaseRow {
  app: string;
  version: string;
  manifest: string;
  integrity: string;
  size: number;
  expires: number;
  artifactPath: string | null;
  addedAt: number;
}

// One release of the catalog, or null.
export function readRelease(store: ControlStore, app: string, version: string): ReleaseRow | null {
  return (store.prepare('SELECT * FROM releases WHERE app = ? AND version = ?').get(app, version) as ReleaseRow | undefined) ?? null;
}

// The catalog, by app then time added.
export function listReleases(store: ControlStore, app?: string): ReleaseRow[] {
  if (app) return store.prepare('SELECT * FROM releases WHERE app = ? ORDER BY addedAt, version').all(app) as ReleaseRow[];
  return store.prepare('SELECT * FROM releases ORDER BY app, addedAt, version').all() as ReleaseRow[];
}

// Inserts or replaces a release's signed manifest (a re-add of the same bytes re-signs it).
export function upsertRelease(store: ControlStore, r: Omit<ReleaseRow, 'manifest'> & { manifest: Envelope }): void {
  store
    .prepare(
      `INSERT INTO releases (app, version, manifest, integrity, size, expires, artifactPath, addedAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(app, version) DO UPDATE SET manifest = excluded.manifest, expires = excluded.expires, artifactPath = excluded.artifactPath`,
    )
    .run(r.app, r.version, JSON.stringify(r.manifest), r.integrity, r.size, r.expires, r.artifactPath, r.addedAt);
}

// The stored manifest envelope of a release row.
export function manifestOf(row: ReleaseRow): Envelope {
  return JSON.parse(row.manifest) as Envelope;
}
