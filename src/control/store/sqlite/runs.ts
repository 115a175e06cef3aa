import type { HeartbeatApp } from '../../../core/heartbeat-schema.js';
import { StewardError } from '../../../core/errors.js';
import type { AttemptRow, IssuedRow, OpenAttempt, RunNodeRow, RunReads, RunRow, RunWrites } from '../store.js';
import { parseJson } from '../parse-json.js';
import { judgementRow, runAnalysisOf, type JudgementRaw } from '../judgement-rows.js';
import { judgementText } from '../judgement-record.js';
import { skewRefused } from './nodes.js';
import type { Prepare } from './prepare.js';

interface Raw {
  id: number;
  app: string;
  version: string;
  startedAt: number;
  batch: string;
  verdictTimeoutMs: number;
  allowRetryReverted: number;
  heartbeatIntervalMs: number;
  stopped: number;
  paused: number;
  status: RunRow['status'];
  haltCode: string | null;
  haltNodeId: string | null;
  haltMessage: string | null;
  endedAt: number | null;
  selector: string;
  canaries: number;
  namedCanaries: string;
  canarySeed: number;
  bakeMs: number;
  maxFailures: number;
  maxRefused: string;
  maxFetchFailures: string;
  failuresCarried: number;
  windows: string;
  tz: string;
  startAt: number | null;
  behind: number;
  retryOf: number | null;
  analysis: string | null;
}

const strings = (text: string): string[] => {
  const v = parseJson<unknown>(text, []);
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
};

function toRow(r: Raw): RunRow {
  return {
    id: r.id,
    app: r.app,
    version: r.version,
    startedAt: r.startedAt,
    heartbeatIntervalMs: r.heartbeatIntervalMs,
    stopped: r.stopped === 1,
    paused: r.paused === 1,
    status: r.status,
    haltCode: r.haltCode,
    haltNodeId: r.haltNodeId,
    haltMessage: r.haltMessage,
    endedAt: r.endedAt,
    selector: r.selector,
    canaries: r.canaries,
    namedCanaries: strings(r.namedCanaries),
    canarySeed: r.canarySeed,
    batch: r.batch,
    bakeMs: r.bakeMs,
    maxFailures: r.maxFailures,
    maxRefused: r.maxRefused,
    maxFetchFailures: r.maxFetchFailures,
    failuresCarried: r.failuresCarried,
    verdictTimeoutMs: r.verdictTimeoutMs,
    allowRetryReverted: r.allowRetryReverted === 1,
    windows: strings(r.windows),
    tz: r.tz,
    startAt: r.startAt,
    behind: r.behind === 1,
    retryOf: r.retryOf,
    analysis: runAnalysisOf(r.analysis),
  };
}

const one = (r: unknown): RunRow | null => (r ? toRow(r as Raw) : null);

function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === 'SQLITE_CONSTRAINT_UNIQUE';
}

// The runs, run_nodes and issued tables.
export function sqliteRuns(q: Prepare): RunReads & RunWrites {
  return {
    async get(id) {
      return one(q('SELECT * FROM runs WHERE id = ?').get(id));
    },
    async active(app) {
      return one(q(`SELECT * FROM runs WHERE app = ? AND status = 'running' ORDER BY id DESC LIMIT 1`).get(app));
    },
    async runningOf(app) {
      return (q(`SELECT * FROM runs WHERE app = ? AND status = 'running' ORDER BY id DESC`).all(app) as Raw[]).map(toRow);
    },
    async activeAll() {
      return (q(`SELECT * FROM runs WHERE status = 'running' ORDER BY id`).all() as Raw[]).map(toRow);
    },
    async anyActive() {
      return q(`SELECT 1 FROM runs WHERE status = 'running' LIMIT 1`).get() !== undefined;
    },
    async latest(app) {
      return one(q('SELECT * FROM runs WHERE app = ? ORDER BY id DESC LIMIT 1').get(app));
    },
    async latestAll() {
      return (q('SELECT * FROM runs WHERE id IN (SELECT MAX(id) FROM runs GROUP BY app) ORDER BY app').all() as Raw[]).map(toRow);
    },
    async page(app, beforeId, limit) {
      const rows = q(`SELECT * FROM runs WHERE (? IS NULL OR app = ?) AND (? IS NULL OR id < ?) ORDER BY id DESC LIMIT ?`).all(app, app, beforeId, beforeId, limit) as Raw[];
      return rows.map(toRow);
    },
    async lastSucceeded(app) {
      return one(q(`SELECT * FROM runs WHERE app = ? AND status = 'succeeded' ORDER BY id DESC LIMIT 1`).get(app));
    },
    async nodes(runId) {
      // Why json_each in SQL: the node's report of this one app, not every app parsed in JS for
      // every node of a 100,000-node run.
      const rows = q(
        `SELECT rn.nodeId, rn.lastHeartbeatAt, rn.listedApp,
           (SELECT j.value FROM json_each(n.apps) j WHERE json_extract(j.value, '$.name') = r.app LIMIT 1) AS app,
           CASE WHEN ${skewRefused('n.')} THEN n.skewRefusedSince END AS clockSkewRefusedSince
         FROM run_nodes rn JOIN nodes n ON n.nodeId = rn.nodeId JOIN runs r ON r.id = rn.runId
         WHERE rn.runId = ? ORDER BY rn.nodeId`,
      ).all(runId) as Array<{ nodeId: string; lastHeartbeatAt: number | null; listedApp: number; app: string | null; clockSkewRefusedSince: number | null }>;
      return rows.map((r): RunNodeRow => ({
        nodeId: r.nodeId,
        lastHeartbeatAt: r.lastHeartbeatAt,
        listedApp: r.listedApp === 1,
        app: r.app === null ? null : parseJson<HeartbeatApp | null>(r.app, null),
        clockSkewRefusedSince: r.clockSkewRefusedSince,
      }));
    },
    async issued(runId) {
      return q('SELECT nodeId, attemptId, issuedAt, notAfter, batch FROM issued WHERE runId = ? ORDER BY issuedAt, nodeId').all(runId) as IssuedRow[];
    },
    async attempt(attemptId) {
      return (
        (q('SELECT i.attemptId, i.nodeId, r.app, r.version, r.id AS runId FROM issued i JOIN runs r ON r.id = i.runId WHERE i.attemptId = ?').get(attemptId) as AttemptRow | undefined) ?? null
      );
    },
    async openAttemptsFor(nodeId, now) {
      return q(
        `SELECT r.app, r.version, i.attemptId, i.notAfter, r.bakeMs, i.issuedAt, r.verdictTimeoutMs FROM issued i JOIN runs r ON r.id = i.runId
         WHERE i.nodeId = ? AND r.status = 'running' AND r.stopped = 0 AND (i.notAfter IS NULL OR i.notAfter > ?)
           AND NOT EXISTS (SELECT 1 FROM receipts x WHERE x.attemptId = i.attemptId AND x.nodeId = i.nodeId AND x.counts = 1)
         ORDER BY i.issuedAt, r.app`,
      ).all(nodeId, now) as OpenAttempt[];
    },
    async countByStatus() {
      return q('SELECT status, COUNT(*) AS runs FROM runs GROUP BY status').all() as Array<{ status: RunRow['status']; runs: number }>;
    },
    async insert(run, nodes) {
      let id: number;
      try {
        const r = q(
          `INSERT INTO runs (app, version, startedAt, canary, batchSize, verdictTimeoutMs, allowRetryReverted, heartbeatIntervalMs, selector, canaries, namedCanaries,
             canarySeed, batch, bakeMs, maxFailures, maxRefused, failuresCarried, windows, tz, startAt, behind, retryOf, maxFetchFailures, analysis)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        ).run(
          // canary and batchSize: schema 1's columns, superseded by namedCanaries and batch.
          run.app, run.version, run.startedAt, run.namedCanaries[0] ?? null, 0, run.verdictTimeoutMs, run.allowRetryReverted ? 1 : 0, run.heartbeatIntervalMs, run.selector,
          run.canaries, JSON.stringify(run.namedCanaries), run.canarySeed, run.batch, run.bakeMs, run.maxFailures, run.maxRefused, run.failuresCarried, JSON.stringify(run.windows),
          run.tz, run.startAt, run.behind ? 1 : 0, run.retryOf, run.maxFetchFailures, JSON.stringify(run.analysis),
        );
        id = Number(r.lastInsertRowid);
      } catch (err) {
        if (isUniqueViolation(err)) throw new StewardError('BUSY', `a rollout of ${run.app} is already running; one run per app (stop it first)`, { cause: err });
        throw err;
      }
      const add = q('INSERT INTO run_nodes (runId, nodeId, lastHeartbeatAt, listedApp) VALUES (?, ?, ?, ?)');
      for (const n of nodes) add.run(id, n.nodeId, n.lastHeartbeatAt, n.listedApp ? 1 : 0);
      return id;
    },
    async refreezeNodes(runId, nodes) {
      const put = q('INSERT INTO run_nodes (runId, nodeId, lastHeartbeatAt, listedApp) VALUES (?, ?, ?, ?) ON CONFLICT (runId, nodeId) DO UPDATE SET lastHeartbeatAt = excluded.lastHeartbeatAt, listedApp = excluded.listedApp');
      for (const n of nodes) put.run(runId, n.nodeId, n.lastHeartbeatAt, n.listedApp ? 1 : 0);
    },
    async insertIssued(runId, i) {
      return q('INSERT INTO issued (runId, nodeId, attemptId, issuedAt, notAfter, batch) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (runId, nodeId) DO NOTHING').run(runId, i.nodeId, i.attemptId, i.issuedAt, i.notAfter, i.batch).changes === 1;
    },
    // Why true at once: a write transaction (BEGIN IMMEDIATE) already excludes every other writer.
    async tryLock() {
      return true;
    },
    async lock() {},
    async end(runId, status, halt, at) {
      q(`UPDATE runs SET status = ?, haltCode = ?, haltNodeId = ?, haltMessage = ?, endedAt = ? WHERE id = ? AND status = 'running'`).run(
        status, halt?.code ?? null, halt?.nodeId ?? null, halt?.message ?? null, at, runId,
      );
    },
    async setStopped(runId) {
      q('UPDATE runs SET stopped = 1 WHERE id = ?').run(runId);
    },
    async setPaused(runId, paused) {
      q('UPDATE runs SET paused = ? WHERE id = ?').run(paused ? 1 : 0, runId);
    },
    async judgements(runId) {
      return (q('SELECT * FROM run_judgements WHERE runId = ? ORDER BY step').all(runId) as JudgementRaw[]).map(judgementRow);
    },
    async insertJudgement(j) {
      return (
        q(
          `INSERT INTO run_judgements (runId, step, at, mode, verdict, windowFrom, windowTo, judgement) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (runId, step) DO NOTHING`,
        ).run(j.runId, j.step, j.at, j.mode, j.verdict, j.from, j.to, judgementText(j.judgement)).changes === 1
      );
    },
    async resumeJudgements(runId, at, by) {
      return q(`UPDATE run_judgements SET resumedAt = ?, resumedBy = ? WHERE runId = ? AND verdict = 'inconclusive' AND resumedAt IS NULL`).run(at, by, runId).changes;
    },
  };
}
