import type { HeartbeatApp } from '../../../core/heartbeat-schema.js';
import { StewardError } from '../../../core/errors.js';
import { parseJson } from '../parse-json.js';
import { judgementRow, runAnalysisOf, type JudgementRaw } from '../judgement-rows.js';
import { judgementText } from '../judgement-record.js';
import { skewRefused } from './nodes.js';
import type { AttemptRow, IssuedRow, OpenAttempt, RunNodeRow, RunReads, RunRow, RunWrites } from '../store.js';
import { isUniqueViolation, type Query } from './query.js';

type Raw = Omit<RunRow, 'namedCanaries' | 'windows' | 'analysis'> & { namedCanaries: string; windows: string; analysis: string | null };

const COLUMNS = `id, app, version, "startedAt", "heartbeatIntervalMs", stopped, paused, status, "haltCode", "haltNodeId", "haltMessage", "endedAt", selector, canaries,
  "namedCanaries", "canarySeed", batch, "bakeMs", "maxFailures", "maxRefused", "failuresCarried", "verdictTimeoutMs", "allowRetryReverted", windows, tz, "startAt", behind, "retryOf", "maxFetchFailures", analysis`;

const strings = (text: string): string[] => {
  const v = parseJson<unknown>(text, []);
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
};

const toRow = (r: Raw): RunRow => ({ ...r, namedCanaries: strings(r.namedCanaries), windows: strings(r.windows), analysis: runAnalysisOf(r.analysis) });
const one = (r: Raw | null): RunRow | null => (r ? toRow(r) : null);

// The first half of a run's advance lock key (pg_advisory_xact_lock(int, int), a key space of
// its own beside migrate's one-bigint key): "stew" in ASCII; the run's id is the second half.
export const RUN_LOCK_CLASS = 0x73746577;

// The runs, run_nodes and issued tables.
export function pgRuns(q: Query): RunReads & RunWrites {
  return {
    async get(id) {
      return one(await q.one<Raw>(`SELECT ${COLUMNS} FROM runs WHERE id = $1`, [id]));
    },
    async active(app) {
      return one(await q.one<Raw>(`SELECT ${COLUMNS} FROM runs WHERE app = $1 AND status = 'running' ORDER BY id DESC LIMIT 1`, [app]));
    },
    async runningOf(app) {
      return (await q.rows<Raw>(`SELECT ${COLUMNS} FROM runs WHERE app = $1 AND status = 'running' ORDER BY id DESC`, [app])).map(toRow);
    },
    async activeAll() {
      return (await q.rows<Raw>(`SELECT ${COLUMNS} FROM runs WHERE status = 'running' ORDER BY id`)).map(toRow);
    },
    async anyActive() {
      return (await q.one(`SELECT 1 FROM runs WHERE status = 'running' LIMIT 1`)) !== null;
    },
    async latest(app) {
      return one(await q.one<Raw>(`SELECT ${COLUMNS} FROM runs WHERE app = $1 ORDER BY id DESC LIMIT 1`, [app]));
    },
    async latestAll() {
      return (await q.rows<Raw>(`SELECT ${COLUMNS} FROM runs WHERE id IN (SELECT MAX(id) FROM runs GROUP BY app) ORDER BY app`)).map(toRow);
    },
    async page(app, beforeId, limit) {
      return (await q.rows<Raw>(`SELECT ${COLUMNS} FROM runs WHERE ($1::text IS NULL OR app = $1) AND ($2::bigint IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`, [app, beforeId, limit])).map(toRow);
    },
    async lastSucceeded(app) {
      return one(await q.one<Raw>(`SELECT ${COLUMNS} FROM runs WHERE app = $1 AND status = 'succeeded' ORDER BY id DESC LIMIT 1`, [app]));
    },
    async nodes(runId) {
      // Why in SQL: the node's report of this one app, not every app parsed in JS for every node
      // of a 100,000-node run. json, not jsonb: it takes any JSON text the column holds.
      const rows = await q.rows<{ nodeId: string; lastHeartbeatAt: number | null; listedApp: boolean; app: string | null; clockSkewRefusedSince: number | null }>(
        `SELECT rn."nodeId", rn."lastHeartbeatAt", rn."listedApp",
           (SELECT j::text FROM json_array_elements(n.apps::json) j WHERE j->>'name' = r.app LIMIT 1) AS app,
           CASE WHEN ${skewRefused('n.')} THEN n."skewRefusedSince" END AS "clockSkewRefusedSince"
         FROM run_nodes rn JOIN nodes n ON n."nodeId" = rn."nodeId" JOIN runs r ON r.id = rn."runId"
         WHERE rn."runId" = $1 ORDER BY rn."nodeId"`,
        [runId],
      );
      return rows.map((r): RunNodeRow => ({
        nodeId: r.nodeId,
        lastHeartbeatAt: r.lastHeartbeatAt,
        listedApp: r.listedApp,
        app: r.app === null ? null : parseJson<HeartbeatApp | null>(r.app, null),
        clockSkewRefusedSince: r.clockSkewRefusedSince,
      }));
    },
    async issued(runId) {
      return q.rows<IssuedRow>('SELECT "nodeId", "attemptId", "issuedAt", "notAfter", batch FROM issued WHERE "runId" = $1 ORDER BY "issuedAt", "nodeId"', [runId]);
    },
    async attempt(attemptId) {
      return q.one<AttemptRow>('SELECT i."attemptId", i."nodeId", r.app, r.version, r.id AS "runId" FROM issued i JOIN runs r ON r.id = i."runId" WHERE i."attemptId" = $1', [attemptId]);
    },
    async openAttemptsFor(nodeId, now) {
      return q.rows<OpenAttempt>(
        `SELECT r.app, r.version, i."attemptId", i."notAfter", r."bakeMs", i."issuedAt", r."verdictTimeoutMs" FROM issued i JOIN runs r ON r.id = i."runId"
         WHERE i."nodeId" = $1 AND r.status = 'running' AND NOT r.stopped AND (i."notAfter" IS NULL OR i."notAfter" > $2)
           AND NOT EXISTS (SELECT 1 FROM receipts x WHERE x."attemptId" = i."attemptId" AND x."nodeId" = i."nodeId" AND x.counts)
         ORDER BY i."issuedAt", r.app`,
        [nodeId, now],
      );
    },
    async countByStatus() {
      return q.rows<{ status: RunRow['status']; runs: number }>('SELECT status, COUNT(*) AS runs FROM runs GROUP BY status');
    },
    async insert(run, nodes) {
      let id: number;
      try {
        const r = await q.guarded(() =>
          q.one<{ id: number }>(
            `INSERT INTO runs (app, version, "startedAt", canary, "batchSize", "verdictTimeoutMs", "allowRetryReverted", "heartbeatIntervalMs", selector, canaries, "namedCanaries",
               "canarySeed", batch, "bakeMs", "maxFailures", "maxRefused", "failuresCarried", windows, tz, "startAt", behind, "retryOf", "maxFetchFailures", analysis)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24) RETURNING id`,
            [
              // canary and batchSize: schema 1's columns, superseded by namedCanaries and batch.
              run.app, run.version, run.startedAt, run.namedCanaries[0] ?? null, 0, run.verdictTimeoutMs, run.allowRetryReverted, run.heartbeatIntervalMs, run.selector,
              run.canaries, JSON.stringify(run.namedCanaries), run.canarySeed, run.batch, run.bakeMs, run.maxFailures, run.maxRefused, run.failuresCarried, JSON.stringify(run.windows),
              run.tz, run.startAt, run.behind, run.retryOf, run.maxFetchFailures, JSON.stringify(run.analysis),
            ],
          ),
        );
        id = (r as { id: number }).id;
      } catch (err) {
        if (isUniqueViolation(err, 'one_running_run_per_app')) throw new StewardError('BUSY', `a rollout of ${run.app} is already running; one run per app (stop it first)`, { cause: err });
        throw err;
      }
      // One statement for every node of the run (a 100,000-node run is one round trip).
      if (nodes.length > 0) {
        await q.count(
          `INSERT INTO run_nodes ("runId", "nodeId", "lastHeartbeatAt", "listedApp")
           SELECT $1, n, h, l FROM unnest($2::text[], $3::bigint[], $4::boolean[]) AS u(n, h, l)`,
          [id, nodes.map((n) => n.nodeId), nodes.map((n) => n.lastHeartbeatAt), nodes.map((n) => n.listedApp)],
        );
      }
      return id;
    },
    async refreezeNodes(runId, nodes) {
      if (nodes.length === 0) return;
      await q.count(
        `INSERT INTO run_nodes ("runId", "nodeId", "lastHeartbeatAt", "listedApp")
         SELECT $1, n, h, l FROM unnest($2::text[], $3::bigint[], $4::boolean[]) AS u(n, h, l)
         ON CONFLICT ("runId", "nodeId") DO UPDATE SET "lastHeartbeatAt" = excluded."lastHeartbeatAt", "listedApp" = excluded."listedApp"`,
        [runId, nodes.map((n) => n.nodeId), nodes.map((n) => n.lastHeartbeatAt), nodes.map((n) => n.listedApp)],
      );
    },
    async insertIssued(runId, i) {
      const n = await q.guarded(() =>
        q.count('INSERT INTO issued ("runId", "nodeId", "attemptId", "issuedAt", "notAfter", batch) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT ("runId", "nodeId") DO NOTHING', [
          runId, i.nodeId, i.attemptId, i.issuedAt, i.notAfter, i.batch,
        ]),
      );
      return n === 1;
    },
    async tryLock(runId) {
      return (await q.one<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1, $2) AS locked', [RUN_LOCK_CLASS, runId]))?.locked === true;
    },
    async lock(runId) {
      await q.one('SELECT pg_advisory_xact_lock($1, $2)', [RUN_LOCK_CLASS, runId]);
    },
    async end(runId, status, halt, at) {
      await q.count(`UPDATE runs SET status = $1, "haltCode" = $2, "haltNodeId" = $3, "haltMessage" = $4, "endedAt" = $5 WHERE id = $6 AND status = 'running'`, [
        status, halt?.code ?? null, halt?.nodeId ?? null, halt?.message ?? null, at, runId,
      ]);
    },
    async setStopped(runId) {
      await q.count('UPDATE runs SET stopped = true WHERE id = $1', [runId]);
    },
    async setPaused(runId, paused) {
      await q.count('UPDATE runs SET paused = $1 WHERE id = $2', [paused, runId]);
    },
    async judgements(runId) {
      return (await q.rows<JudgementRaw>('SELECT * FROM run_judgements WHERE "runId" = $1 ORDER BY step', [runId])).map(judgementRow);
    },
    async insertJudgement(j) {
      const n = await q.count(
        `INSERT INTO run_judgements ("runId", step, at, mode, verdict, "windowFrom", "windowTo", judgement) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT ("runId", step) DO NOTHING`,
        [j.runId, j.step, j.at, j.mode, j.verdict, j.from, j.to, judgementText(j.judgement)],
      );
      return n === 1;
    },
    async resumeJudgements(runId, at, by) {
      return q.count(`UPDATE run_judgements SET "resumedAt" = $1, "resumedBy" = $2 WHERE "runId" = $3 AND verdict = 'inconclusive' AND "resumedAt" IS NULL`, [at, by, runId]);
    },
  };
}
