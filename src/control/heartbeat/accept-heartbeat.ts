// `POST /v1/heartbeat` (DESIGN §6): verify, then in one transaction record the heartbeat and its
// fresh receipts, advance the rollouts and answer what this node should run. A rejection is
// logged and changes nothing.
import type { KeyObject } from 'node:crypto';
import { MAX_BODY_BYTES, type HeartbeatAnswer } from '../../core/control-api.js';
import { parsePublicKey } from '../../platform/keys.js';
import { logger } from '../../platform/log.js';
import { advanceAllRuns } from '../rollouts/advance-runs.js';
import { desiredFor } from '../rollouts/desired.js';
import { errorAnswer, type Answer } from '../server/answer.js';
import { readNode, recordHeartbeat } from '../store/nodes.js';
import type { ControlStore } from '../store/open-store.js';
import { insertReceipt, storedReceiptEnvelope } from '../store/receipts.js';
import { attemptById } from '../store/runs.js';
import { createKeyCache } from './node-key-cache.js';
import { ackedSeqs, verifyHeartbeat, type KnownNode } from './verify-heartbeat.js';

const log = logger('control:heartbeat');
const nodeKeys = createKeyCache();

function knownNode(store: ControlStore, nodeId: string): KnownNode | null {
  const row = readNode(store, nodeId);
  if (!row) return null;
  let nodeKey: KeyObject;
  try {
    nodeKey = nodeKeys.parse(row.nodePublicKey);
  } catch {
    log('node=%s has an unparsable node key in the store; treated as unknown', nodeId);
    return null;
  }
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
  return {
    nodeId: row.nodeId,
    nodeKey,
    helperKey: () => (helperKey === undefined ? (helperKey = parseHelperKey()) : helperKey),
    lastSeq: row.lastSeq,
    storedReceipt: (seq) => storedReceiptEnvelope(store, row.nodeId, seq),
  };
}

// Handles one heartbeat body at `now`.
export function acceptHeartbeat(store: ControlStore, body: Buffer, now: number, heartbeatSeconds: number): Answer {
  return store.write((): Answer => {
    const verdict = verifyHeartbeat(body, (id) => knownNode(store, id), (id) => attemptById(store, id), now, { maxBytes: MAX_BODY_BYTES });
    if (!verdict.ok) {
      log('heartbeat rejected status=%d code=%s: %s', verdict.status, verdict.code, verdict.message);
      const extra = { ...(verdict.lastSeq !== undefined ? { lastSeq: verdict.lastSeq } : {}), ...(verdict.serverTime !== undefined ? { serverTime: verdict.serverTime } : {}) };
      return errorAnswer(verdict.status, verdict.code, verdict.message, extra);
    }
    const hb = verdict.heartbeat;
    recordHeartbeat(store, hb, now);
    for (const r of verdict.receipts) insertReceipt(store, hb.nodeId, r, now);
    if (verdict.receipts.length) {
      log('node=%s stored receipts %s', hb.nodeId, verdict.receipts.map((r) => `seq=${r.payload.seq} ${r.payload.app} ${r.payload.outcome}${r.counts ? '' : ' (not counting)'}`).join(', '));
    }
    advanceAllRuns(store, now);
    const answer: HeartbeatAnswer = { ackedSeqs: ackedSeqs(verdict), desired: desiredFor(store, hb.nodeId), heartbeatSeconds };
    return { status: 200, body: answer };
  });
}
