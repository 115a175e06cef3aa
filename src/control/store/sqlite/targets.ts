import type { RunOwner, TargetReads, TargetRow, TargetWrites } from '../store.js';
import { readTargetPolicy, targetPolicyColumns } from '../target-policy.js';
import type { Prepare } from './prepare.js';

interface Raw {
  name: string;
  app: string;
  version: string;
  priority: number;
  policy: string;
  paused: number;
  setAt: number;
  setBy: string | null;
  clearedRunId: number;
  analysis: string | null;
}

const toRow = ({ analysis, ...r }: Raw): TargetRow => ({ ...r, policy: readTargetPolicy(r.policy, r.name, analysis), paused: r.paused === 1 });

// The targets and run_owners tables (docs/design.md §18).
export function sqliteTargets(q: Prepare): TargetReads & TargetWrites {
  return {
    async list() {
      return (q('SELECT * FROM targets ORDER BY name').all() as Raw[]).map(toRow);
    },
    async get(name) {
      const r = q('SELECT * FROM targets WHERE name = ?').get(name) as Raw | undefined;
      return r ? toRow(r) : null;
    },
    async runs(name) {
      return q(`SELECT runId, kind, target FROM run_owners WHERE target = ? AND kind IN ('target', 'revert') ORDER BY runId DESC`).all(name) as RunOwner[];
    },
    async ownerOf(runId) {
      return (q('SELECT runId, kind, target FROM run_owners WHERE runId = ?').get(runId) as RunOwner | undefined) ?? null;
    },
    async put(t) {
      const cols = targetPolicyColumns(t.policy);
      q(
        `INSERT INTO targets (name, app, version, priority, policy, paused, setAt, setBy, clearedRunId, analysis) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (name) DO UPDATE SET app = excluded.app, version = excluded.version, priority = excluded.priority, policy = excluded.policy,
           paused = excluded.paused, setAt = excluded.setAt, setBy = excluded.setBy, clearedRunId = excluded.clearedRunId, analysis = excluded.analysis`,
      ).run(t.name, t.app, t.version, t.priority, cols.policy, t.paused ? 1 : 0, t.setAt, t.setBy, t.clearedRunId, cols.analysis);
    },
    async remove(name) {
      return q('DELETE FROM targets WHERE name = ?').run(name).changes === 1;
    },
    async linkRun(o) {
      q('INSERT INTO run_owners (runId, kind, target) VALUES (?, ?, ?)').run(o.runId, o.kind, o.target);
    },
  };
}
