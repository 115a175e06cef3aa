import type { Envelope } from '../../../core/release-schemas.js';
import { parseJson } from '../parse-json.js';
import type { AppKeyRow, DowngradeRow, ReleaseReads, ReleaseRow, ReleaseWrites } from '../store.js';
import type { Query } from './query.js';

type Raw = Omit<ReleaseRow, 'manifest' | 'indexedManifest'> & { manifest: string; indexedManifest: string | null };

const toRow = (r: Raw): ReleaseRow => ({ ...r, manifest: parseJson<Envelope>(r.manifest, { payload: '', sig: '', keyId: '' }), indexedManifest: r.indexedManifest === null ? null : parseJson<Envelope | null>(r.indexedManifest, null) });
const COLUMNS = 'app, version, manifest, integrity, size, expires, "artifactPath", "addedAt", "keyId", "indexedManifest"';
type RawDowngrade = Omit<DowngradeRow, 'authorization'> & { envelope: string };
const toDowngrade = ({ envelope, ...r }: RawDowngrade): DowngradeRow => ({ ...r, authorization: parseJson<Envelope>(envelope, { payload: '', sig: '', keyId: '' }) });
const DOWNGRADE_COLUMNS = 'app, version, "keyId", "notAfter", envelope, "addedAt"';

// The releases table, the key ids allowed per app (app_keys) and the downgrade authorizations (downgrades).
export function pgReleases(q: Query): ReleaseReads & ReleaseWrites {
  return {
    async get(app, version) {
      const r = await q.one<Raw>(`SELECT ${COLUMNS} FROM releases WHERE app = $1 AND version = $2`, [app, version]);
      return r ? toRow(r) : null;
    },
    async list(app) {
      const rows = app ? await q.rows<Raw>(`SELECT ${COLUMNS} FROM releases WHERE app = $1 ORDER BY "addedAt", version`, [app]) : await q.rows<Raw>(`SELECT ${COLUMNS} FROM releases ORDER BY app, "addedAt", version`);
      return rows.map(toRow);
    },
    async keys(app) {
      return app
        ? q.rows<AppKeyRow>('SELECT app, "keyId", "addedAt" FROM app_keys WHERE app = $1 ORDER BY "addedAt", "keyId"', [app])
        : q.rows<AppKeyRow>('SELECT app, "keyId", "addedAt" FROM app_keys ORDER BY app, "addedAt", "keyId"');
    },
    async upsert(r) {
      await q.count(
        `INSERT INTO releases (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (app, version) DO UPDATE SET manifest = excluded.manifest, expires = excluded.expires, "artifactPath" = excluded."artifactPath", "keyId" = excluded."keyId", "indexedManifest" = excluded."indexedManifest"`,
        [r.app, r.version, JSON.stringify(r.manifest), r.integrity, r.size, r.expires, r.artifactPath, r.addedAt, r.keyId, r.indexedManifest ? JSON.stringify(r.indexedManifest) : null],
      );
    },
    async remove(app, version) {
      return (await q.count('DELETE FROM releases WHERE app = $1 AND version = $2', [app, version])) === 1;
    },
    async allowKey(app, keyId, at) {
      await q.count('INSERT INTO app_keys (app, "keyId", "addedAt") VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [app, keyId, at]);
    },
    async downgrade(app, version) {
      const r = await q.one<RawDowngrade>(`SELECT ${DOWNGRADE_COLUMNS} FROM downgrades WHERE app = $1 AND version = $2`, [app, version]);
      return r ? toDowngrade(r) : null;
    },
    async downgrades(app) {
      const rows = app
        ? await q.rows<RawDowngrade>(`SELECT ${DOWNGRADE_COLUMNS} FROM downgrades WHERE app = $1 ORDER BY "addedAt", version`, [app])
        : await q.rows<RawDowngrade>(`SELECT ${DOWNGRADE_COLUMNS} FROM downgrades ORDER BY app, "addedAt", version`);
      return rows.map(toDowngrade);
    },
    async putDowngrade(r) {
      await q.count(
        `INSERT INTO downgrades (${DOWNGRADE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (app, version) DO UPDATE SET "keyId" = excluded."keyId", "notAfter" = excluded."notAfter", envelope = excluded.envelope, "addedAt" = excluded."addedAt"`,
        [r.app, r.version, r.keyId, r.notAfter, JSON.stringify(r.authorization), r.addedAt],
      );
    },
  };
}
