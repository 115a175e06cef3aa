import type { TrustKeyRow, TrustMetadataRow, TrustPendingRow, TrustReads, TrustWrites } from '../store.js';
import type { Prepare } from './prepare.js';

const META = 'role, version, bytes, createdAt';

// The trust_metadata, trust_keys, trust_pending_keys and trust_pending tables (docs/design.md §21.2).
export function sqliteTrust(q: Prepare): TrustReads & TrustWrites {
  return {
    async latest(role) {
      return (q(`SELECT ${META} FROM trust_metadata WHERE role = ? ORDER BY version DESC LIMIT 1`).get(role) as TrustMetadataRow | undefined) ?? null;
    },
    async get(role, version) {
      return (q(`SELECT ${META} FROM trust_metadata WHERE role = ? AND version = ?`).get(role, version) as TrustMetadataRow | undefined) ?? null;
    },
    async after(role, after) {
      return q(`SELECT ${META} FROM trust_metadata WHERE role = ? AND version > ? ORDER BY version`).all(role, after) as TrustMetadataRow[];
    },
    async latestOf(prefix) {
      return q(
        `SELECT ${META} FROM trust_metadata m WHERE substr(role, 1, length(?)) = ?
           AND version = (SELECT MAX(version) FROM trust_metadata WHERE role = m.role) ORDER BY role`,
      ).all(prefix, prefix) as TrustMetadataRow[];
    },
    async keys() {
      return q('SELECT role, privateKey, publicKey, createdAt FROM trust_keys ORDER BY role').all() as TrustKeyRow[];
    },
    async pendingKeys() {
      return q('SELECT role, privateKey, publicKey, createdAt FROM trust_pending_keys ORDER BY role').all() as TrustKeyRow[];
    },
    async pending(role) {
      return (q('SELECT role, bytes, updatedAt, updatedBy FROM trust_pending WHERE role = ?').get(role) as TrustPendingRow | undefined) ?? null;
    },
    async publish(r) {
      return q(`INSERT INTO trust_metadata (${META}) VALUES (?, ?, ?, ?) ON CONFLICT (role, version) DO NOTHING`).run(r.role, r.version, r.bytes, r.createdAt).changes === 1;
    },
    async insertKeys(rows) {
      let all = true;
      for (const r of rows) {
        const n = q('INSERT INTO trust_keys (role, privateKey, publicKey, createdAt) VALUES (?, ?, ?, ?) ON CONFLICT (role) DO NOTHING').run(r.role, r.privateKey, r.publicKey, r.createdAt).changes;
        if (n !== 1) all = false;
      }
      return all;
    },
    async insertPendingKeys(rows) {
      let all = true;
      for (const r of rows) {
        const n = q('INSERT INTO trust_pending_keys (role, privateKey, publicKey, createdAt) VALUES (?, ?, ?, ?) ON CONFLICT (role) DO NOTHING').run(r.role, r.privateKey, r.publicKey, r.createdAt).changes;
        if (n !== 1) all = false;
      }
      return all;
    },
    async dropPendingKeys(roles) {
      for (const role of roles) q('DELETE FROM trust_pending_keys WHERE role = ?').run(role);
    },
    async promotePendingKey(role, publicKey) {
      const row = q('SELECT role, privateKey, publicKey, createdAt FROM trust_pending_keys WHERE role = ? AND publicKey = ?').get(role, publicKey) as TrustKeyRow | undefined;
      if (!row) return false;
      q('DELETE FROM trust_keys WHERE role = ?').run(role);
      q('INSERT INTO trust_keys (role, privateKey, publicKey, createdAt) VALUES (?, ?, ?, ?)').run(row.role, row.privateKey, row.publicKey, row.createdAt);
      q('DELETE FROM trust_pending_keys WHERE role = ?').run(role);
      return true;
    },
    async setPending(r) {
      q(
        `INSERT INTO trust_pending (role, bytes, updatedAt, updatedBy) VALUES (?, ?, ?, ?)
         ON CONFLICT (role) DO UPDATE SET bytes = excluded.bytes, updatedAt = excluded.updatedAt, updatedBy = excluded.updatedBy`,
      ).run(r.role, r.bytes, r.updatedAt, r.updatedBy);
    },
    async clearPending(role) {
      q('DELETE FROM trust_pending WHERE role = ?').run(role);
    },
  };
}
