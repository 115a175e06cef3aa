import type { PinReads, PinRow, PinWrites } from '../store.js';
import type { Prepare } from './prepare.js';

// The pins table (docs/design.md §18).
export function sqlitePins(q: Prepare): PinReads & PinWrites {
  return {
    async list() {
      return q('SELECT nodeId, app, version, by, reason, at, until, runId FROM pins ORDER BY nodeId, app').all() as PinRow[];
    },
    async get(nodeId, app) {
      return (q('SELECT nodeId, app, version, by, reason, at, until, runId FROM pins WHERE nodeId = ? AND app = ?').get(nodeId, app) as PinRow | undefined) ?? null;
    },
    async put(p) {
      q(
        `INSERT INTO pins (nodeId, app, version, by, reason, at, until, runId) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (nodeId, app) DO UPDATE SET version = excluded.version, by = excluded.by, reason = excluded.reason, at = excluded.at, until = excluded.until, runId = excluded.runId`,
      ).run(p.nodeId, p.app, p.version, p.by, p.reason, p.at, p.until, p.runId);
    },
    async setRun(nodeId, app, runId) {
      q('UPDATE pins SET runId = ? WHERE nodeId = ? AND app = ?').run(runId, nodeId, app);
    },
    async remove(nodeId, app) {
      return (q('DELETE FROM pins WHERE nodeId = ? AND app = ? RETURNING nodeId, app, version, by, reason, at, until, runId').get(nodeId, app) as PinRow | undefined) ?? null;
    },
  };
}
