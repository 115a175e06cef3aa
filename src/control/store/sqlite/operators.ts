import { StewardError } from '../../../core/errors.js';
import type { OperatorReads, OperatorRow, OperatorWrites } from '../store.js';
import type { Prepare } from './prepare.js';

const COLUMNS = 'name, role, tokenHash, createdAt, rotatedAt';

// The operators table (only each API token's sha256 is stored).
export function sqliteOperators(q: Prepare): OperatorReads & OperatorWrites {
  return {
    async list() {
      return q(`SELECT ${COLUMNS} FROM operators ORDER BY name`).all() as OperatorRow[];
    },
    async get(name) {
      return (q(`SELECT ${COLUMNS} FROM operators WHERE name = ?`).get(name) as OperatorRow | undefined) ?? null;
    },
    async insert(o) {
      try {
        q(`INSERT INTO operators (${COLUMNS}) VALUES (?, ?, ?, ?, ?)`).run(o.name, o.role, o.tokenHash, o.createdAt, o.rotatedAt);
      } catch (err) {
        if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
          throw new StewardError('OPERATOR_EXISTS', `operator ${o.name} exists already; \`steward-control operator rotate ${o.name}\` gives it a new token`, { cause: err });
        }
        throw err;
      }
    },
    async setToken(name, tokenHash, at) {
      return q('UPDATE operators SET tokenHash = ?, rotatedAt = ? WHERE name = ?').run(tokenHash, at, name).changes === 1;
    },
    async remove(name) {
      // The sessions first, as the foreign key would: an operator removed is logged out everywhere.
      q('DELETE FROM sessions WHERE operator = ?').run(name);
      return q('DELETE FROM operators WHERE name = ?').run(name).changes === 1;
    },
  };
}
