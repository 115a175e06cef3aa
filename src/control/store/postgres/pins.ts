import type { PinReads, PinRow, PinWrites } from '../store.js';
import type { Query } from './query.js';

const COLUMNS = '"nodeId", app, version, by, reason, at, until, "runId"';

// The pins table (docs/design.md §18).
export function pgPins(q: Query): PinReads & PinWrites {
  return {
    async list() {
      return q.rows<PinRow>(`SELECT ${COLUMNS} FROM pins ORDER BY "nodeId", app`);
    },
    async get(nodeId, app) {
      return q.one<PinRow>(`SELECT ${COLUMNS} FROM pins WHERE "nodeId" = $1 AND app = $2`, [nodeId, app]);
    },
    async put(p) {
      await q.count(
        `INSERT INTO pins (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT ("nodeId", app) DO UPDATE SET version = excluded.version, by = excluded.by, reason = excluded.reason, at = excluded.at, until = excluded.until, "runId" = excluded."runId"`,
        [p.nodeId, p.app, p.version, p.by, p.reason, p.at, p.until, p.runId],
      );
    },
    async setRun(nodeId, app, runId) {
      await q.count('UPDATE pins SET "runId" = $1 WHERE "nodeId" = $2 AND app = $3', [runId, nodeId, app]);
    },
    async remove(nodeId, app) {
      return q.one<PinRow>(`DELETE FROM pins WHERE "nodeId" = $1 AND app = $2 RETURNING ${COLUMNS}`, [nodeId, app]);
    },
  };
}
