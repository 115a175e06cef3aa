import type { HaltReason, Issued, Plan, RolloutRun } from '../../core/rollout-planner.js';
import type { ControlStore } from './open-store.js';

export type RunStatus = Plan['status'];

export interface RunRow {
  id: number;
  app: string;
  version: string;
  startedAt: number;
  canary: string | null;
  batchSize: number;
  verdictTimeoutMs: number;
  allowRetryReverted: number;
  heartbeatIntervalMs: number;
  stopped: number;
  status: RunStatus;
  haltCode: string | null;
  haltNodeId: string | null;
  haltMessage: string | null;
  endedAt: number | null;
}

export type NewRun = Omit<RolloutRun, 'id' | 'stopped'>;

// Inserts a running run with its node snapshot; the unique index refuses a second running run
// of one app (the caller checks first, for a clear message).
export function insertRun(store: ControlStore, run: NewRun, nodes: Array<{ nodeId: string; lastHeartbeatAt: number | null }>): number {
  const r = store
    .prepare(
      `INSERT INTO runs (app, version, startedAt, canary, batchSize, verdictTimeoutMs, allowRetryReverted, heartbeatIntervalMs)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .run(run.app, run.version, run.startedAt, run.canary, run.batchSize, run.verdictTimeoutMs, run.allowRetryReverted ? 1 : 0, run.heartbeatIntervalMs);
  const id = Number(r.lastInsertRowid);
  const add = store.prepare('INSERT INTO run_nodes (runId, nodeId, lastHeartbeatAt) VALUES (?, ?, ?)');
  for (const n of nodes) add.run(id, n.nodeId, n.lastHeartbeatAt);
  return id;
}

// One run, or null.
export function readRun(store: ControlStore, id: number): RunRow | null {
  return (store.prepare('SELECT * FROM runs WHERE id = ?').get(id) as RunRow | undefined) ?? null;
}

// The running run of an app, or null.
export function runningRun(store: ControlStore, app: string): RunRow | null {
  return (store.prepare(`SELECT * FROM runs WHERE app = ? AND status = 'running'`).get(app) as RunRow | undefined) ?? null;
}

// Every running run.
export function runningRuns(store: ControlStore): RunRow[] {
  return store.prepare(`SELECT * FROM runs WHERE status = 'running' ORDER BY id`).all() as RunRow[];
}

// The latest run of an app (running or ended), or null.
export function latestRun(store: ControlStore, app: string): RunRow | null {
  return (store.prepare('SELECT * FROM runs WHERE app = ? ORDER BY id DESC LIMIT 1').get(app) as RunRow | undefined) ?? null;
}

// The latest run of every app.
export function latestRuns(store: ControlStore): RunRow[] {
  return store.prepare('SELECT * FROM runs WHERE id IN (SELECT MAX(id) FROM runs GROUP BY app) ORDER BY app').all() as RunRow[];
}

// The planner's view of a run row.
export function toRolloutRun(row: RunRow): RolloutRun {
  return {
    id: String(row.id),
    app: row.app,
    version: row.version,
    startedAt: row.startedAt,
    canary: row.canary,
    batchSize: row.batchSize,
    verdictTimeoutMs: row.verdictTimeoutMs,
    allowRetryReverted: row.allowRetryReverted === 1,
    heartbeatIntervalMs: row.heartbeatIntervalMs,
    stopped: row.stopped === 1,
  };
}

// The node snapshot of a run, joined with the nodes still enrolled (a removed node leaves the run).
export function runNodes(store: ControlStore, runId: number): Array<{ nodeId: string; lastHeartbeatAt: number | null; apps: string }> {
  return store
    .prepare('SELECT rn.nodeId, rn.lastHeartbeatAt, n.apps FROM run_nodes rn JOIN nodes n ON n.nodeId = rn.nodeId WHERE rn.runId = ? ORDER BY rn.nodeId')
    .all(runId) as Array<{ nodeId: string; lastHeartbeatAt: number | null; apps: string }>;
}

// The attempts a run issued.
export function issuedFor(store: ControlStore, runId: number): Issued[] {
  return store.prepare('SELECT nodeId, attemptId, issuedAt FROM issued WHERE runId = ? ORDER BY issuedAt, nodeId').all(runId) as Issued[];
}

// Records an attempt before it is sent.
export function insertIssued(store: ControlStore, runId: number, i: Issued): void {
  store.prepare('INSERT INTO issued (runId, nodeId, attemptId, issuedAt) VALUES (?, ?, ?, ?)').run(runId, i.nodeId, i.attemptId, i.issuedAt);
}

// The issue an attemptId names, with its run's app and version, of any run; or null.
export function attemptById(store: ControlStore, attemptId: string): { attemptId: string; nodeId: string; app: string; version: string; runId: number } | null {
  const row = store
    .prepare('SELECT i.attemptId, i.nodeId, r.app, r.version, r.id AS runId FROM issued i JOIN runs r ON r.id = i.runId WHERE i.attemptId = ?')
    .get(attemptId) as { attemptId: string; nodeId: string; app: string; version: string; runId: number } | undefined;
  return row ?? null;
}

// Records a run's end once: a run that already ended keeps its first status.
export function endRun(store: ControlStore, runId: number, status: Exclude<RunStatus, 'running'>, halt: HaltReason | undefined, now: number): void {
  store
    .prepare(`UPDATE runs SET status = ?, haltCode = ?, haltNodeId = ?, haltMessage = ?, endedAt = ? WHERE id = ? AND status = 'running'`)
    .run(status, halt?.code ?? null, halt?.nodeId ?? null, halt?.message ?? null, now, runId);
}

// Asks a run to stop: the next advance ends it as stopped.
export function markStopped(store: ControlStore, runId: number): void {
  store.prepare('UPDATE runs SET stopped = 1 WHERE id = ?').run(runId);
}

// Attempts issued to a node by running, unstopped runs that no counting receipt answered yet.
export function openAttemptsFor(store: ControlStore, nodeId: string): Array<{ app: string; version: string; attemptId: string }> {
  return store
    .prepare(
      `SELECT r.app, r.version, i.attemptId FROM issued i JOIN runs r ON r.id = i.runId
       WHERE i.nodeId = ? AND r.status = 'running' AND r.stopped = 0
         AND NOT EXISTS (SELECT 1 FROM receipts x WHERE x.attemptId = i.attemptId AND x.nodeId = i.nodeId AND x.counts = 1)
       ORDER BY i.issuedAt, r.app`,
    )
    .all(nodeId) as Array<{ app: string; version: string; attemptId: string }>;
}
