import type { Envelope } from '../../../core/release-schemas.js';
import type { AppKeyRow, DowngradeRow, ReleaseReads, ReleaseRow, ReleaseWrites } from '../store.js';
import { parseJson } from '../parse-json.js';
import type { Prepare } from './prepare.js';

type Raw = Omit<ReleaseRow, 'manifest' | 'indexedManifest'> & { manifest: string; indexedManifest: string | null };

const toRow = (r: Raw): ReleaseRow => ({ ...r, manifest: parseJson<Envelope>(r.manifest, { payload: '', sig: '', keyId: '' }), indexedManifest: r.indexedManifest === null ? null : parseJson<Envelope | null>(r.indexedManifest, null) });
type RawDowngrade = Omit<DowngradeRow, 'authorization'> & { envelope: string };
const toDowngrade = ({ envelope, ...r }: RawDowngrade): DowngradeRow => ({ ...r, authorization: parseJson<Envelope>(envelope, { payload: '', sig: '', keyId: '' }) });

// The releases table, the key ids allowed per app (app_keys) and the downgrade authorizations (downgrades).
export function sqliteReleases(q: Prepare): ReleaseReads & ReleaseWrites {
  return {
    async get(app, version) {
      const r = q('SELECT * FROM releases WHERE app = ? AND version = ?').get(app, version) as Raw | undefined;
      return r ? toRow(r) : null;
    },
    async list(app) {
      const rows = app ? q('SELECT * FROM releases WHERE app = ? ORDER BY addedAt, version').all(app) : q('SELECT * FROM releases ORDER BY app, addedAt, version').all();
      return (rows as Raw[]).map(toRow);
    },
    async keys(app) {
      return (app ? q('SELECT * FROM app_keys WHERE app = ? ORDER BY addedAt, keyId').all(app) : q('SELECT * FROM app_keys ORDER BY app, addedAt, keyId').all()) as AppKeyRow[];
    },
    async upsert(r) {
      q(
        `INSERT INTO releases (app, version, manifest, integrity, size, expires, artifactPath, addedAt, keyId, indexedManifest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT(app, version) DO UPDATE SET manifest = excluded.manifest, expires = excluded.expires, artifactPath = excluded.artifactPath, keyId = excluded.keyId, indexedManifest = excluded.indexedManifest`,
      ).run(r.app, r.version, JSON.stringify(r.manifest), r.integrity, r.size, r.expires, r.artifactPath, r.addedAt, r.keyId, r.indexedManifest ? JSON.stringify(r.indexedManifest) : null);
    },
    async remove(app, version) {
      return q('DELETE FROM releases WHERE app = ? AND version = ?').run(app, version).changes === 1;
    },
    async allowKey(app, keyId, at) {
      q('INSERT OR IGNORE INTO app_keys (app, keyId, addedAt) VALUES (?, ?, ?)').run(app, keyId, at);
    },
    async downgrade(app, version) {
      const r = q('SELECT * FROM downgrades WHERE app = ? AND version = ?').get(app, version) as RawDowngrade | undefined;
      return r ? toDowngrade(r) : null;
    },
    async downgrades(app) {
      const rows = app ? q('SELECT * FROM downgrades WHERE app = ? ORDER BY addedAt, version').all(app) : q('SELECT * FROM downgrades ORDER BY app, addedAt, version').all();
      return (rows as RawDowngrade[]).map(toDowngrade);
    },
    async putDowngrade(r) {
      q(
        `INSERT INTO downgrades (app, version, keyId, notAfter, envelope, addedAt) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT(app, version) DO UPDATE SET keyId = excluded.keyId, notAfter = excluded.notAfter, envelope = excluded.envelope, addedAt = excluded.addedAt`,
      ).run(r.app, r.version, r.keyId, r.notAfter, JSON.stringify(r.authorization), r.addedAt);
    },
  };
}
