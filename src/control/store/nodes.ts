import type { HeartbeatApp, HeartbeatPayload } from '../../core/heartbeat-schema.js';
import type { ControlStore } from './open-store.js';

export interface NodeRow {
  nodeId: string;
  hostname: string;
  nodePublicKey: string;
  helperPublicKey: string;
  enrolledAt: number;
  lastSeq: number;
  lastHeartbeatAt: number | null;
  apps: string;
  bootId: string | null;
  agentVersion: string | null;
}

// Inserts a freshly enrolled node.
export function insertNode(store: ControlStore, n: { nodeId: string; hostname: string; nodePublicKey: string; helperPublicKey: string; enrolledAt: number }): void {
  store
    .prepare('INSERT INTO nodes (nodeId, hostname, nodePublicKey, helperPublicKey, enrolledAt) VALUES (?, ?, ?, ?, ?)')
    .run(n.nodeId, n.hostname, n.nodePublicKey, n.helperPublicKey, n.enrolledAt);
}

// One node, or null.
export function readNode(store: ControlStore, nodeId: string): NodeRow | null {
  return (store.prepare('SELECT * FROM nodes WHERE nodeId = ?').get(nodeId) as NodeRow | undefined) ?? null;
}

// A node's public key PEM, or null: all a heartbeat's signature check needs.
export function readNodeKey(store: ControlStore, nodeId: string): string | null {
  return (store.prepare('SELECT nodePublicKey FROM nodes WHERE nodeId = ?').get(nodeId) as { nodePublicKey: string } | undefined)?.nodePublicKey ?? null;
}

// Every enrolled node, by nodeId.
export function listNodes(store: ControlStore): NodeRow[] {
  return store.prepare('SELECT * FROM nodes ORDER BY nodeId').all() as NodeRow[];
}

// Records an accepted heartbeat: its seq, time and report.
export function recordHeartbeat(store: ControlStore, hb: HeartbeatPayload, now: number): void {
  store
    .prepare('UPDATE nodes SET lastSeq = ?, lastHeartbeatAt = ?, apps = ?, bootId = ?, agentVersion = ? WHERE nodeId = ?')
    .run(hb.seq, now, JSON.stringify(hb.apps), hb.bootId, hb.agentVersion, hb.nodeId);
}

// Removes a node from the fleet; its stored receipts stay as history. True when it existed.
export function removeNode(store: ControlStore, nodeId: string): boolean {
  return store.write(() => {
    store.prepare('DELETE FROM run_nodes WHERE nodeId = ?').run(nodeId);
    return store.prepare('DELETE FROM nodes WHERE nodeId = ?').run(nodeId).changes === 1;
  });
}

// The apps a node last reported (its own JSON, written by recordHeartbeat).
export function reportedApps(row: NodeRow): HeartbeatApp[] {
  try {
    const apps = JSON.parse(row.apps) as unknown;
    return Array.isArray(apps) ? (apps as HeartbeatApp[]) : [];
  } catch {
    return [];
  }
}
