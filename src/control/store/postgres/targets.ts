import type { RunOwner, TargetReads, TargetRow, TargetWrites } from '../store.js';
import { readTargetPolicy, targetPolicyColumns } from '../target-policy.js';
import type { Query } from './query.js';

interface Raw {
  name: string;
  app: string;
  version: string;
  priority: number;
  policy: string;
  paused: boolean;
  setAt: number;
  setBy: string | null;
  clearedRunId: number;
  analysis: string | null;
}

const toRow = ({ analysis, ...r }: Raw): TargetRow => ({ ...r, policy: readTargetPolicy(r.policy, r.name, analysis) });

// The targets and run_owners tables (docs/design.md §18).
export function pgTargets(q: Query): TargetReads & TargetWrites {
  return {
    async list() {
      return (await q.rows<Raw>('SELECT * FROM targets ORDER BY name')).map(toRow);
    },
    async get(name) {
      const r = await q.one<Raw>('SELECT * FROM targets WHERE name = $1', [name]);
      return r ? toRow(r) : null;
    },
    async runs(name) {
      return q.rows<RunOwner>(`SELECT "runId", kind, target FROM run_owners WHERE target = $1 AND kind IN ('target', 'revert') ORDER BY "runId" DESC`, [name]);
    },
    async ownerOf(runId) {
      return q.one<RunOwner>('SELECT "runId", kind, target FROM run_owners WHERE "runId" = $1', [runId]);
    },
    async put(t) {
      const cols = targetPolicyColumns(t.policy);
      await q.count(
        `INSERT INTO targets (name, app, version, priority, policy, paused, "setAt", "setBy", "clearedRunId", analysis) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (name) DO UPDATE SET app = excluded.app, version = excluded.version, priority = excluded.priority, policy = excluded.policy,
           paused = excluded.paused, "setAt" = excluded."setAt", "setBy" = excluded."setBy", "clearedRunId" = excluded."clearedRunId", analysis = excluded.analysis`,
        [t.name, t.app, t.version, t.priority, cols.policy, t.paused, t.setAt, t.setBy, t.clearedRunId, cols.analysis],
      );
    },
    async remove(name) {
      return (await q.count('DELETE FROM targets WHERE name = $1', [name])) === 1;
    },
    async linkRun(o) {
      await q.count('INSERT INTO run_owners ("runId", kind, target) VALUES ($1, $2, $3)', [o.runId, o.kind, o.target]);
    },
  };
}
