import type { HeartbeatApp } from '../../../core/heartbeat-schema.js';
import { isLabels, type Labels } from '../../../core/labels.js';
import type { NodeAuth, NodeReads, NodeRow, NodeWrites } from '../store.js';
import { parseJson } from '../parse-json.js';
import type { Prepare } from './prepare.js';

interface Raw extends Omit<NodeRow, 'apps' | 'labels'> {
  apps: string;
  labels: string;
}

function toRow(r: Raw): NodeRow {
  const apps = parseJson<unknown>(r.apps, []);
  const labels = parseJson<unknown>(r.labels, {});
  return { ...r, apps: Array.isArray(apps) ? (apps as HeartbeatApp[]) : [], labels: isLabels(labels) ? labels : {} };
}

// The nodes table.
export function sqliteNodes(q: Prepare): NodeReads & NodeWrites {
  return {
    async get(nodeId) {
      const r = q('SELECT * FROM nodes WHERE nodeId = ?').get(nodeId) as Raw | undefined;
      return r ? toRow(r) : null;
    },
    async auth(nodeId) {
      return (q('SELECT nodeId, nodePublicKey, helperPublicKey, lastSeq FROM nodes WHERE nodeId = ?').get(nodeId) as NodeAuth | undefined) ?? null;
    },
    async key(nodeId) {
      return (q('SELECT nodePublicKey FROM nodes WHERE nodeId = ?').get(nodeId) as { nodePublicKey: string } | undefined)?.nodePublicKey ?? null;
    },
    async list() {
      return (q('SELECT * FROM nodes ORDER BY nodeId').all() as Raw[]).map(toRow);
    },
    async page(afterNodeId, limit) {
      const rows = afterNodeId === null ? q('SELECT * FROM nodes ORDER BY nodeId LIMIT ?').all(limit) : q('SELECT * FROM nodes WHERE nodeId > ? ORDER BY nodeId LIMIT ?').all(afterNodeId, limit);
      return (rows as Raw[]).map(toRow);
    },
    async insert(n) {
      q('INSERT INTO nodes (nodeId, hostname, nodePublicKey, helperPublicKey, enrolledAt, labels) VALUES (?, ?, ?, ?, ?, ?)').run(
        n.nodeId, n.hostname, n.nodePublicKey, n.helperPublicKey, n.enrolledAt, JSON.stringify(n.labels),
      );
    },
    async recordHeartbeat(hb, at) {
      q('UPDATE nodes SET lastSeq = ?, lastHeartbeatAt = ?, apps = ?, bootId = ?, agentVersion = ? WHERE nodeId = ?').run(hb.seq, at, JSON.stringify(hb.apps), hb.bootId, hb.agentVersion, hb.nodeId);
    },
    async setLabels(nodeId, labels: Labels) {
      return q('UPDATE nodes SET labels = ? WHERE nodeId = ?').run(JSON.stringify(labels), nodeId).changes === 1;
    },
    async remove(nodeId) {
      q('DELETE FROM run_nodes WHERE nodeId = ?').run(nodeId);
      return q('DELETE FROM nodes WHERE nodeId = ?').run(nodeId).changes === 1;
    },
  };
}
