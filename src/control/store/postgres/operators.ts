import { StewardError } from '../../../core/errors.js';
import type { OperatorReads, OperatorRow, OperatorWrites } from '../store.js';
import { isUniqueViolation, type Query } from './query.js';

const COLUMNS = 'name, role, "tokenHash", "createdAt", "rotatedAt"';

// The operators table (only each API token's sha256 is stored).
export function pgOperators(q: Query): OperatorReads & OperatorWrites {
  return {
    async list() {
      return q.rows<OperatorRow>(`SELECT ${COLUMNS} FROM operators ORDER BY name`);
    },
    async get(name) {
      return q.one<OperatorRow>(`SELECT ${COLUMNS} FROM operators WHERE name = $1`, [name]);
    },
    async insert(o) {
      try {
        await q.guarded(() => q.count(`INSERT INTO operators (${COLUMNS}) VALUES ($1, $2, $3, $4, $5)`, [o.name, o.role, o.tokenHash, o.createdAt, o.rotatedAt]));
      } catch (err) {
        if (isUniqueViolation(err, 'operators_pkey')) {
          throw new StewardError('OPERATOR_EXISTS', `operator ${o.name} exists already; \`steward-control operator rotate ${o.name}\` gives it a new token`, { cause: err });
        }
        throw err;
      }
    },
    async setToken(name, tokenHash, at) {
      return (await q.count('UPDATE operators SET "tokenHash" = $1, "rotatedAt" = $2 WHERE name = $3', [tokenHash, at, name])) === 1;
    },
    async remove(name) {
      await q.count('DELETE FROM sessions WHERE operator = $1', [name]);
      return (await q.count('DELETE FROM operators WHERE name = $1', [name])) === 1;
    },
  };
}
