import type { HeartbeatApp } from '../../../core/heartbeat-schema.js';
import { isLabels } from '../../../core/labels.js';
import { parseJson } from '../parse-json.js';
import type { NodeAuth, NodeReads, NodeRow, NodeWrites } from '../store.js';
import type { Query } from './query.js';

interface Raw extends Omit<NodeRow, 'apps' | 'labels'> {
  apps: string;
  labels: string;
}

function toRow(r: Raw): NodeRow {
  const apps = parseJson<unknown>(r.apps, []);
  const labels = parseJson<unknown>(r.labels, {});
  return { ...r, apps: Array.isArray(apps) ? (apps as HeartbeatApp[]) : [], labels: isLabels(labels) ? labels : {} };
}

const COLUMNS = `"nodeId", hostname, "nodePublicKey", "helperPublicKey", "enrolledAt", "lastSeq", "lastHeartbeatAt", apps, "bootId", "agentVersion", labels`;

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
    async insert(n) {
      await q.guarded(() =>
        q.count(`INSERT INTO nodes ("nodeId", hostname, "nodePublicKey", "helperPublicKey", "enrolledAt", labels) VALUES ($1, $2, $3, $4, $5, $6)`, [
          n.nodeId, n.hostname, n.nodePublicKey, n.helperPublicKey, n.enrolledAt, JSON.stringify(n.labels),
        ]),
      );
    },
    async recordHeartbeat(hb, at) {
      await q.count(`UPDATE nodes SET "lastSeq" = $1, "lastHeartbeatAt" = $2, apps = $3, "bootId" = $4, "agentVersion" = $5 WHERE "nodeId" = $6`, [
        hb.seq, at, JSON.stringify(hb.apps), hb.bootId, hb.agentVersion, hb.nodeId,
      ]);
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
