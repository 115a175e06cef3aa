import type { HeartbeatApp } from '../../../core/heartbeat-schema.js';
import type { Labels } from '../../../core/labels.js';
import type { AppVersionCount, FreshnessCounts, NodeAuth, NodeReads, NodeRow, NodeWrites } from '../store.js';
import { parseJson, parseLabels } from '../parse-json.js';
import { withSkewRefusal, type SkewRefusalColumns } from '../skew-refusal.js';
import { withNodeTrust, type NodeTrustColumns } from '../node-trust.js';
import type { Prepare } from './prepare.js';

interface Raw extends Omit<NodeRow, 'apps' | 'labels' | 'clockSkewRefused' | 'trust'>, SkewRefusalColumns, NodeTrustColumns {
  apps: string;
  labels: string;
}

function toRow(r: Raw): NodeRow {
  const apps = parseJson<unknown>(r.apps, []);
  return { ...withNodeTrust(withSkewRefusal(r)), apps: Array.isArray(apps) ? (apps as HeartbeatApp[]) : [], labels: parseLabels(r.labels) };
}

// Whether the skew refusal on record counts (store/skew-refusal.ts), of the nodes row `n.` when named.
export const skewRefused = (n = '') => `${n}skewRefusedAt IS NOT NULL AND (${n}lastHeartbeatAt IS NULL OR ${n}skewRefusedAt >= ${n}lastHeartbeatAt)`;
const SKEW_REFUSED = skewRefused();

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
    async countByFreshness(since) {
      const r = q(
        `SELECT COUNT(*) AS total, COALESCE(SUM(CASE WHEN lastHeartbeatAt IS NULL THEN 1 ELSE 0 END), 0) AS never,
           COALESCE(SUM(CASE WHEN lastHeartbeatAt >= ? THEN 1 ELSE 0 END), 0) AS fresh FROM nodes`,
      ).get(since) as { total: number; never: number; fresh: number };
      const counts: FreshnessCounts = { fresh: r.fresh, stale: r.total - r.fresh - r.never, never: r.never };
      return counts;
    },
    async countClockSkewRefused() {
      return (q(`SELECT COUNT(*) AS n FROM nodes WHERE ${SKEW_REFUSED}`).get() as { n: number }).n;
    },
    async countMetadataStale(maxAgeSeconds) {
      return (
        q(
          `SELECT COUNT(*) AS n FROM nodes WHERE trust IS NOT NULL AND json_valid(trust) AND json_extract(trust, '$.scheme') = 'tuf'
             AND (json_extract(trust, '$.timestampAgeSeconds') IS NULL OR json_extract(trust, '$.timestampAgeSeconds') > ?)`,
        ).get(maxAgeSeconds) as { n: number }
      ).n;
    },
    async countByAppVersion() {
      // Why json_each in SQL: one pass over the table, not every node's apps parsed in JS.
      return q(
        `SELECT json_extract(j.value, '$.name') AS app, json_extract(j.value, '$.current') AS version, COUNT(*) AS nodes
         FROM nodes n, json_each(n.apps) j GROUP BY 1, 2`,
      ).all() as AppVersionCount[];
    },
    async insert(n) {
      q('INSERT INTO nodes (nodeId, hostname, nodePublicKey, helperPublicKey, enrolledAt, labels) VALUES (?, ?, ?, ?, ?, ?)').run(
        n.nodeId, n.hostname, n.nodePublicKey, n.helperPublicKey, n.enrolledAt, JSON.stringify(n.labels),
      );
    },
    async recordHeartbeat(hb, at) {
      q(
        `UPDATE nodes SET lastSeq = ?, lastHeartbeatAt = ?, apps = ?, bootId = ?, agentVersion = ?, clockSkewMs = ?,
           skewRefusedSince = NULL, skewRefusedAt = NULL, skewRefusedMs = NULL, trust = ?, trustAt = ? WHERE nodeId = ?`,
      ).run(hb.seq, at, JSON.stringify(hb.apps), hb.bootId, hb.agentVersion, hb.sentAt - at, hb.trust ? JSON.stringify(hb.trust) : null, hb.trust ? at : null, hb.nodeId);
    },
    async recordClockSkewRefusal(nodeId, skewMs, at, minGapMs) {
      // One statement, so the gap is the row's own: no read before the write.
      const r = q(
        `UPDATE nodes SET skewRefusedSince = CASE WHEN ${SKEW_REFUSED} THEN skewRefusedSince ELSE @at END, skewRefusedAt = @at, skewRefusedMs = @skewMs
         WHERE nodeId = @nodeId AND NOT (${SKEW_REFUSED} AND skewRefusedAt > @at - @minGapMs)`,
      ).run({ nodeId, skewMs, at, minGapMs });
      return r.changes === 1;
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
