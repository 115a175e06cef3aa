// `POST /v1/heartbeat` (DESIGN §6) in two steps, so that heartbeats arriving together can share
// one commit (group-commit.ts). openHeartbeatBody checks the body and the node key's signature
// outside any transaction; recordOpenedHeartbeat, inside the write transaction, checks seq,
// clock and receipts against the node as it is then, records the heartbeat and its fresh
// receipts, advances the rollouts and answers what this node should run. A rejection is logged
// and changes nothing.
import type { KeyObject } from 'node:crypto';
import { MAX_BODY_BYTES, type HeartbeatAnswer } from '../../core/control-api.js';
import type { HeartbeatPayload } from '../../core/heartbeat-schema.js';
import { parsePublicKey } from '../../platform/keys.js';
import { logger } from '../../platform/log.js';
import { advanceAllRuns } from '../rollouts/advance-runs.js';
import { desiredFor } from '../rollouts/desired.js';
import { errorAnswer, type Answer } from '../server/answer.js';
import { readNode, readNodeKey, recordHeartbeat } from '../store/nodes.js';
import type { ControlStore } from '../store/open-store.js';
import { insertReceipt, storedReceiptEnvelope } from '../store/receipts.js';
import { attemptById } from '../store/runs.js';
import { createKeyCache, NODE_KEY_CACHE_SIZE } from './node-key-cache.js';
import { ackedSeqs, checkHeartbeat, openHeartbeat, verifyHeartbeat, type HeartbeatRejection, type KnownNode } from './verify-heartbeat.js';

const log = logger('control:heartbeat');
const nodeKeys = createKeyCache();

// Each store's node key PEMs by nodeId, as last read, so that the check before the transaction
// does not query the store for every heartbeat (an SQLite read outside a transaction takes and
// drops the WAL read lock each time). Only a fresh read may reject: a remembered key that does
// not verify is read again (the node may have been re-keyed by another process), and the check
// inside the transaction compares the PEM with the store's, so a removed or re-keyed node is
// judged as the store holds it then. The same bound as the key cache (~150 bytes a PEM).
const nodePems = new WeakMap<ControlStore, Map<string, string>>();

function pemsOf(store: ControlStore): Map<string, string> {
  let m = nodePems.get(store);
  if (!m) nodePems.set(store, (m = new Map()));
  return m;
}

function rememberPem(store: ControlStore, nodeId: string, pem: string | null): void {
  const m = pemsOf(store);
  m.delete(nodeId);
  if (pem === null) return;
  if (m.size >= NODE_KEY_CACHE_SIZE) m.delete(m.keys().next().value as string);
  m.set(nodeId, pem);
}

// A node's parsed key, or null when the store holds an unparsable one (the node is then unknown).
function parseNodeKey(nodeId: string, pem: string): KeyObject | null {
  try {
    return nodeKeys.parse(pem);
  } catch {
    log('node=%s has an unparsable node key in the store; treated as unknown', nodeId);
    return null;
  }
}

// A node as the store holds it now, with the PEM its key was parsed from.
function knownNode(store: ControlStore, nodeId: string): { node: KnownNode; nodeKeyPem: string } | null {
  const row = readNode(store, nodeId);
  if (!row) return null;
  const nodeKey = parseNodeKey(nodeId, row.nodePublicKey);
  if (!nodeKey) return null;
  // Why lazy: most heartbeats relay no receipt, and a PEM parse costs more than a signature check.
  let helperKey: KeyObject | null | undefined;
  const parseHelperKey = (): KeyObject | null => {
    try {
      return parsePublicKey(row.helperPublicKey);
    } catch {
      log('node=%s has an unparsable helper key in the store; its receipts are refused', nodeId);
      return null;
    }
  };
  const node: KnownNode = {
    nodeId: row.nodeId,
    nodeKey,
    helperKey: () => (helperKey === undefined ? (helperKey = parseHelperKey()) : helperKey),
    lastSeq: row.lastSeq,
    storedReceipt: (seq) => storedReceiptEnvelope(store, row.nodeId, seq),
  };
  return { node, nodeKeyPem: row.nodePublicKey };
}

function rejectionAnswer(v: HeartbeatRejection): Answer {
  log('heartbeat rejected status=%d code=%s: %s', v.status, v.code, v.message);
  const extra = { ...(v.lastSeq !== undefined ? { lastSeq: v.lastSeq } : {}), ...(v.serverTime !== undefined ? { serverTime: v.serverTime } : {}) };
  return errorAnswer(v.status, v.code, v.message, extra);
}

// A body whose signature holds under the key `nodeKeyPem` the store held for its node.
export interface OpenedHeartbeatBody {
  ok: true;
  body: Buffer;
  heartbeat: HeartbeatPayload;
  nodeKeyPem: string;
}

// Checks a body up to its node key's signature and schema, reading only the node's key (outside
// any transaction is fine: nothing here depends on state a heartbeat changes). A rejection's
// answer is final and changes nothing.
export function openHeartbeatBody(store: ControlStore, body: Buffer): OpenedHeartbeatBody | { ok: false; answer: Answer } {
  let nodeKeyPem = '';
  let remembered = false;
  const lookup = (fresh: boolean) => (nodeId: string) => {
    let pem = fresh ? undefined : pemsOf(store).get(nodeId);
    remembered = pem !== undefined;
    if (pem === undefined) {
      pem = readNodeKey(store, nodeId) ?? undefined;
      rememberPem(store, nodeId, pem ?? null);
    }
    const nodeKey = pem === undefined ? null : parseNodeKey(nodeId, pem);
    if (!nodeKey) return null;
    nodeKeyPem = pem!;
    return { nodeId, nodeKey };
  };
  let opened = openHeartbeat(body, lookup(false), { maxBytes: MAX_BODY_BYTES });
  // Why only these two: every other rejection is the same whatever the node's key.
  if (!opened.ok && remembered && (opened.code === 'BAD_SIGNATURE' || opened.code === 'UNKNOWN_NODE')) {
    opened = openHeartbeat(body, lookup(true), { maxBytes: MAX_BODY_BYTES });
  }
  if (!opened.ok) return { ok: false, answer: rejectionAnswer(opened) };
  return { ok: true, body, heartbeat: opened.heartbeat, nodeKeyPem };
}

// Finishes an opened heartbeat at `now`; call inside a write transaction. It reads the node as
// the transaction sees it, so an earlier heartbeat of the same node in this transaction counts.
// Writes nothing when it answers a rejection.
export function recordOpenedHeartbeat(store: ControlStore, opened: OpenedHeartbeatBody, now: number, heartbeatSeconds: number): Answer {
  const issued = (id: string) => attemptById(store, id);
  const known = knownNode(store, opened.heartbeat.nodeId);
  const sameKey = known !== null && known.nodeKeyPem === opened.nodeKeyPem;
  // Why the full check again when the key differs: the node was removed or re-keyed since its
  // signature was checked, and the heartbeat must be judged as if it arrived now.
  if (!sameKey) rememberPem(store, opened.heartbeat.nodeId, known?.nodeKeyPem ?? null);
  const verdict = sameKey
    ? checkHeartbeat(opened.heartbeat, known.node, issued, now)
    : verifyHeartbeat(opened.body, (id) => knownNode(store, id)?.node ?? null, issued, now, { maxBytes: MAX_BODY_BYTES });
  if (!verdict.ok) return rejectionAnswer(verdict);
  const hb = verdict.heartbeat;
  recordHeartbeat(store, hb, now);
  for (const r of verdict.receipts) insertReceipt(store, hb.nodeId, r, now);
  if (verdict.receipts.length) {
    log('node=%s stored receipts %s', hb.nodeId, verdict.receipts.map((r) => `seq=${r.payload.seq} ${r.payload.app} ${r.payload.outcome}${r.counts ? '' : ' (not counting)'}`).join(', '));
  }
  // Why the count: with no run running there is no open attempt to send, and the query for
  // them is skipped (most heartbeats of a fleet arrive while no rollout runs).
  const running = advanceAllRuns(store, now);
  const answer: HeartbeatAnswer = { ackedSeqs: ackedSeqs(verdict), desired: running > 0 ? desiredFor(store, hb.nodeId) : [], heartbeatSeconds };
  return { status: 200, body: answer };
}
