import type { HeartbeatApp } from '../../../core/heartbeat-schema.js';
import { parseJson, parseLabels } from '../parse-json.js';
import type { AppVersionCount, FreshnessCounts, NodeAuth, NodeReads, NodeRow, NodeWrites } from '../store.js';
import { withSkewRefusal, type SkewRefusalColumns } from '../skew-refusal.js';
import { withNodeTrust, type NodeTrustColumns } from '../node-trust.js';
import type { Query } from './query.js';

interface Raw extends Omit<NodeRow, 'apps' | 'labels' | 'clockSkewRefused' | 'trust'>, SkewRefusalColumns, NodeTrustColumns {
  apps: string;
  labels: string;
}

function toRow(r: Raw): NodeRow {
  const apps = parseJson<unknown>(r.apps, []);
  return { ...withNodeTrust(withSkewRefusal(r)), apps: Array.isArray(apps) ? (apps as HeartbeatApp[]) : [], labels: parseLabels(r.labels) };
}

const COLUMNS = `"nodeId", hostname, "nodePublicKey", "helperPublicKey", "enrolledAt", "lastSeq", "lastHeartbeatAt", apps, "bootId", "agentVersion", labels, "clockSkewMs",
  "skewRefusedSince", "skewRefusedAt", "skewRefusedMs", trust, "trustAt"`;

// Whether the skew refusal on record counts (store/skew-refusal.ts), of the nodes row `n.` when named.
export const skewRefused = (n = '') => `${n}"skewRefusedAt" IS NOT NULL AND (${n}"lastHeartbeatAt" IS NULL OR ${n}"skewRefusedAt" >= ${n}"lastHeartbeatAt")`;
const SKEW_REFUSED = skewRefused();

// The nodes table.
export function pgNodes(q: Query): NodeReads & NodeWrites {
  return {
    async get(nodeId) {
      const r = await q.one<Raw>(`SELECT ${COLUMNS} FROM nodes WHERE "nodeId" = $1`, [nodeId]);
      return r ? toRow(r) : null;
    },
    async auth(nodeId) {
      return q.one<NodeAuth>(`SELECT "nodeId", "nodePublicKey", "helperPublicKey", "lastSeq" FROM nodes WHERE "nodeId" = $1`, [nodeId]);
    },
    async key(nodeId) {
      return (await q.one<{ nodePublicKey: string }>(`SELECT "nodePublicKey" FROM nodes WHERE "nodeId" = $1`, [nodeId]))?.nodePublicKey ?? null;
    },
    async list() {
      return (await q.rows<Raw>(`SELECT ${COLUMNS} FROM nodes ORDER BY "nodeId"`)).map(toRow);
    },
    async page(afterNodeId, limit) {
      const rows =
        afterNodeId === null
          ? await q.rows<Raw>(`SELECT ${COLUMNS} FROM nodes ORDER BY "nodeId" LIMIT $1`, [limit])
          : await q.rows<Raw>(`SELECT ${COLUMNS} FROM nodes WHERE "nodeId" > $1 ORDER BY "nodeId" LIMIT $2`, [afterNodeId, limit]);
      return rows.map(toRow);
    },
    async countByFreshness(since) {
      const r = await q.one<FreshnessCounts>(
        `SELECT COUNT(*) FILTER (WHERE "lastHeartbeatAt" >= $1) AS fresh, COUNT(*) FILTER (WHERE "lastHeartbeatAt" < $1) AS stale,
           COUNT(*) FILTER (WHERE "lastHeartbeatAt" IS NULL) AS never FROM nodes`,
        [since],
      );
      return r ?? { fresh: 0, stale: 0, never: 0 };
    },
    async countClockSkewRefused() {
      return (await q.one<{ n: number }>(`SELECT COUNT(*) AS n FROM nodes WHERE ${SKEW_REFUSED}`))?.n ?? 0;
    },
    async countMetadataStale(maxAgeSeconds) {
      // The column holds JSON text a heartbeat's schema checked (store/node-trust.ts).
      return (
        (await q.one<{ n: number }>(
          `SELECT COUNT(*) AS n FROM nodes WHERE trust IS NOT NULL AND trust::json->>'scheme' = 'tuf'
             AND (trust::json->>'timestampAgeSeconds' IS NULL OR (trust::json->>'timestampAgeSeconds')::bigint > $1)`,
          [maxAgeSeconds],
        ))?.n ?? 0
      );
    },
    async countByAppVersion() {
      // Why in SQL: one pass over the table, not every node's apps parsed in JS. A column that
      // holds no JSON array (never written so) counts as no apps rather than failing the read.
      return q.rows<AppVersionCount>(
        `SELECT j->>'name' AS app, j->>'current' AS version, COUNT(*) AS nodes
         FROM nodes n, json_array_elements(CASE WHEN json_typeof(n.apps::json) = 'array' THEN n.apps::json ELSE '[]'::json END) j
         GROUP BY 1, 2`,
      );
    },
    async insert(n) {
      await q.guarded(() =>
        q.count(`INSERT INTO nodes ("nodeId", hostname, "nodePublicKey", "helperPublicKey", "enrolledAt", labels) VALUES ($1, $2, $3, $4, $5, $6)`, [
          n.nodeId, n.hostname, n.nodePublicKey, n.helperPublicKey, n.enrolledAt, JSON.stringify(n.labels),
        ]),
      );
    },
    async recordHeartbeat(hb, at) {
      await q.count(
        `UPDATE nodes SET "lastSeq" = $1, "lastHeartbeatAt" = $2, apps = $3, "bootId" = $4, "agentVersion" = $5, "clockSkewMs" = $6,
           "skewRefusedSince" = NULL, "skewRefusedAt" = NULL, "skewRefusedMs" = NULL, trust = $8, "trustAt" = $9 WHERE "nodeId" = $7`,
        [
        hb.seq, at, JSON.stringify(hb.apps), hb.bootId, hb.agentVersion, hb.sentAt - at, hb.nodeId, hb.trust ? JSON.stringify(hb.trust) : null, hb.trust ? at : null,
      ]);
    },
    async recordClockSkewRefusal(nodeId, skewMs, at, minGapMs) {
      // One statement, so the gap is the row's own: no read before the write.
      const n = await q.count(
        `UPDATE nodes SET "skewRefusedSince" = CASE WHEN ${SKEW_REFUSED} THEN "skewRefusedSince" ELSE $2::bigint END, "skewRefusedAt" = $2::bigint, "skewRefusedMs" = $3::bigint
         WHERE "nodeId" = $1 AND NOT (${SKEW_REFUSED} AND "skewRefusedAt" > $2::bigint - $4::bigint)`,
        [nodeId, at, skewMs, minGapMs],
      );
      return n === 1;
    },
    async setLabels(nodeId, labels) {
      return (await q.count(`UPDATE nodes SET labels = $1 WHERE "nodeId" = $2`, [JSON.stringify(labels), nodeId])) === 1;
    },
    async remove(nodeId) {
      await q.count(`DELETE FROM run_nodes WHERE "nodeId" = $1`, [nodeId]);
      return (await q.count(`DELETE FROM nodes WHERE "nodeId" = $1`, [nodeId])) === 1;
    },
  };
}
