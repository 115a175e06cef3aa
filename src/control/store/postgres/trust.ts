import type { TrustKeyRow, TrustMetadataRow, TrustPendingRow, TrustReads, TrustWrites } from '../store.js';
import type { Query } from './query.js';

const META = 'role, version, bytes, "createdAt"';

// The trust_metadata, trust_keys, trust_pending_keys and trust_pending tables (docs/design.md §21.2).
export function pgTrust(q: Query): TrustReads & TrustWrites {
  return {
    async latest(role) {
      return q.one<TrustMetadataRow>(`SELECT ${META} FROM trust_metadata WHERE role = $1 ORDER BY version DESC LIMIT 1`, [role]);
    },
    async get(role, version) {
      return q.one<TrustMetadataRow>(`SELECT ${META} FROM trust_metadata WHERE role = $1 AND version = $2`, [role, version]);
    },
    async after(role, after) {
      return q.rows<TrustMetadataRow>(`SELECT ${META} FROM trust_metadata WHERE role = $1 AND version > $2 ORDER BY version`, [role, after]);
    },
    async latestOf(prefix) {
      return q.rows<TrustMetadataRow>(
        `SELECT DISTINCT ON (role) ${META} FROM trust_metadata WHERE left(role, length($1)) = $1 ORDER BY role, version DESC`,
        [prefix],
      );
    },
    async keys() {
      return q.rows<TrustKeyRow>('SELECT role, "privateKey", "publicKey", "createdAt" FROM trust_keys ORDER BY role');
    },
    async pendingKeys() {
      return q.rows<TrustKeyRow>('SELECT role, "privateKey", "publicKey", "createdAt" FROM trust_pending_keys ORDER BY role');
    },
    async pending(role) {
      return q.one<TrustPendingRow>('SELECT role, bytes, "updatedAt", "updatedBy" FROM trust_pending WHERE role = $1', [role]);
    },
    async publish(r) {
      // Why ON CONFLICT: two instances re-signing at once take the same version; the first wins.
      return (await q.count(`INSERT INTO trust_metadata (${META}) VALUES ($1, $2, $3, $4) ON CONFLICT (role, version) DO NOTHING`, [r.role, r.version, r.bytes, r.createdAt])) === 1;
    },
    async insertKeys(rows) {
      let all = true;
      for (const r of rows) {
        const n = await q.count('INSERT INTO trust_keys (role, "privateKey", "publicKey", "createdAt") VALUES ($1, $2, $3, $4) ON CONFLICT (role) DO NOTHING', [r.role, r.privateKey, r.publicKey, r.createdAt]);
        if (n !== 1) all = false;
      }
      return all;
    },
    async insertPendingKeys(rows) {
      let all = true;
      for (const r of rows) {
        const n = await q.count('INSERT INTO trust_pending_keys (role, "privateKey", "publicKey", "createdAt") VALUES ($1, $2, $3, $4) ON CONFLICT (role) DO NOTHING', [r.role, r.privateKey, r.publicKey, r.createdAt]);
        if (n !== 1) all = false;
      }
      return all;
    },
    async dropPendingKeys(roles) {
      for (const role of roles) await q.count('DELETE FROM trust_pending_keys WHERE role = $1', [role]);
    },
    async promotePendingKey(role, publicKey) {
      // The pending row is deleted and returned in one statement: two instances publishing the
      // same root at once cannot both take it (the loser's root insert is refused anyway).
      const row = await q.one<TrustKeyRow>('DELETE FROM trust_pending_keys WHERE role = $1 AND "publicKey" = $2 RETURNING role, "privateKey", "publicKey", "createdAt"', [role, publicKey]);
      if (!row) return false;
      await q.count('DELETE FROM trust_keys WHERE role = $1', [role]);
      await q.count('INSERT INTO trust_keys (role, "privateKey", "publicKey", "createdAt") VALUES ($1, $2, $3, $4)', [row.role, row.privateKey, row.publicKey, row.createdAt]);
      return true;
    },
    async setPending(r) {
      await q.count(
        `INSERT INTO trust_pending (role, bytes, "updatedAt", "updatedBy") VALUES ($1, $2, $3, $4)
         ON CONFLICT (role) DO UPDATE SET bytes = excluded.bytes, "updatedAt" = excluded."updatedAt", "updatedBy" = excluded."updatedBy"`,
        [r.role, r.bytes, r.updatedAt, r.updatedBy],
      );
    },
    async clearPending(role) {
      await q.count('DELETE FROM trust_pending WHERE role = $1', [role]);
    },
  };
}
