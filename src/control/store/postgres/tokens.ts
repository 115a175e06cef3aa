import { parseLabels } from '../parse-json.js';
import type { TokenReads, TokenRow, TokenWrites } from '../store.js';
import type { Query } from './query.js';

type Raw = Omit<TokenRow, 'labels'> & { labels: string };

const toRow = (r: Raw): TokenRow => ({ ...r, labels: parseLabels(r.labels) });
const COLUMNS = 'id, "createdAt", "expiresAt", "usedAt", "usedBy", "revokedAt", labels';

// The tokens table (only each token's sha256 is stored).
export function pgTokens(q: Query): TokenReads & TokenWrites {
  return {
    async list() {
      return (await q.rows<Raw>(`SELECT ${COLUMNS} FROM tokens ORDER BY "createdAt", id`)).map(toRow);
    },
    async insert(hash, t) {
      await q.guarded(() => q.count('INSERT INTO tokens (hash, id, "createdAt", "expiresAt", labels) VALUES ($1, $2, $3, $4, $5)', [hash, t.id, t.createdAt, t.expiresAt, JSON.stringify(t.labels)]));
    },
    async spend(hash, at, nodeId) {
      const r = await q.one<{ labels: string }>('UPDATE tokens SET "usedAt" = $1, "usedBy" = $2 WHERE hash = $3 AND "usedAt" IS NULL AND "revokedAt" IS NULL AND "expiresAt" > $1 RETURNING labels', [at, nodeId, hash]);
      return r ? parseLabels(r.labels) : null;
    },
    async revoke(id, at) {
      await q.count('UPDATE tokens SET "revokedAt" = $1 WHERE id = $2 AND "usedAt" IS NULL AND "revokedAt" IS NULL', [at, id]);
      const r = await q.one<Raw>(`SELECT ${COLUMNS} FROM tokens WHERE id = $1`, [id]);
      return r ? toRow(r) : null;
    },
  };
}
