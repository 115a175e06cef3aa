import type { TokenReads, TokenRow, TokenWrites } from '../store.js';
import { parseLabels } from '../parse-json.js';
import type { Prepare } from './prepare.js';

type Raw = Omit<TokenRow, 'labels'> & { labels: string };

const toRow = (r: Raw): TokenRow => ({ ...r, labels: parseLabels(r.labels) });
const COLUMNS = 'id, createdAt, expiresAt, usedAt, usedBy, revokedAt, labels';

// The tokens table (only each token's sha256 is stored).
export function sqliteTokens(q: Prepare): TokenReads & TokenWrites {
  return {
    async list() {
      return (q(`SELECT ${COLUMNS} FROM tokens ORDER BY createdAt, id`).all() as Raw[]).map(toRow);
    },
    async insert(hash, t) {
      q('INSERT INTO tokens (hash, id, createdAt, expiresAt, labels) VALUES (?, ?, ?, ?, ?)').run(hash, t.id, t.createdAt, t.expiresAt, JSON.stringify(t.labels));
    },
    async spend(hash, at, nodeId) {
      const r = q('UPDATE tokens SET usedAt = ?, usedBy = ? WHERE hash = ? AND usedAt IS NULL AND revokedAt IS NULL AND expiresAt > ? RETURNING labels').get(at, nodeId, hash, at) as
        | { labels: string }
        | undefined;
      return r ? parseLabels(r.labels) : null;
    },
    async revoke(id, at) {
      q('UPDATE tokens SET revokedAt = ? WHERE id = ? AND usedAt IS NULL AND revokedAt IS NULL').run(at, id);
      const r = q(`SELECT ${COLUMNS} FROM tokens WHERE id = ?`).get(id) as Raw | undefined;
      return r ? toRow(r) : null;
    },
  };
}
