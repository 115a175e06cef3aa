// `POST /v1/heartbeat` (docs/design.md §6) in two steps, so that heartbeats arriving together can share
// one commit (group-commit.ts). openHeartbeatBody checks the body and the node key's signature
// outside any transaction; recordOpenedHeartbeat, inside the write transaction, checks seq,
// clock and receipts against the node as it is then, records the heartbeat and its fresh
// receipts and answers what this node should run. A rejection is logged and changes nothing,
// but for one: a heartbeat refused for clock skew is recorded on its node (recordSkewRefusal),
// so that `nodes`, the dashboard, the metrics and the rollouts can say why the node is silent.
// Rollouts advance on the rollout ticker, which a stored verdict wakes (rollouts/rollout-ticker.ts).
import type { KeyObject } from 'node:crypto';
import { MAX_BODY_BYTES, type HeartbeatAnswer } from '../../core/control-api.js';
import type { HeartbeatPayload } from '../../core/heartbeat-schema.js';
import type { ReceiptPayload } from '../../core/receipt-schema.js';
import type { Envelope } from '../../core/release-schemas.js';
import { parsePublicKey } from '../../platform/keys.js';
import { logger } from '../../platform/log.js';
import { recordSignals } from '../analysis/record-signals.js';
import { desiredFor } from '../rollouts/desired.js';
import { errorAnswer, type Answer } from '../server/answer.js';
import type { AttemptRow, ControlStore, NodeAuth, StoreTx } from '../store/store.js';
import { createKeyCache, NODE_KEY_CACHE_SIZE } from './node-key-cache.js';
import { ackedSeqs, checkHeartbeat, openHeartbeatInPool, verifyHeartbeat, type HeartbeatRejection, type KnownNode } from './verify-heartbeat.js';

const log = logger('control:heartbeat');
const nodeKeys = createKeyCache();

// Each store's node key PEMs by nodeId, as last read, so that the check before the transaction
// does not query the store for every heartbeat. Only a fresh read may reject: a remembered key
// that does not verify is read again (the node may have been re-keyed by another process), and
// the check inside the transaction compares the PEM with the store's, so a removed or re-keyed
// node is judged as the store holds it then. The same bound as the key cache (~150 bytes a PEM).
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

// A node just enrolled in `store` (its key parsed and its signature checked by the enrollment):
// its key and PEM are remembered now, so that its first heartbeat neither reads the store nor
// parses the PEM again. Call only after the enrollment committed.
export function rememberEnrolledNode(store: ControlStore, nodeId: string, pem: string, key: KeyObject): void {
  nodeKeys.put(pem, key);
  rememberPem(store, nodeId, pem);
}

// Whether the check before the transaction holds `nodeId`'s key in memory for `store` (its PEM
// remembered and that PEM's key parsed): its next heartbeat then reads no key and parses no PEM.
export function nodeKeyInMemory(store: ControlStore, nodeId: string): boolean {
  const pem = pemsOf(store).get(nodeId);
  return pem !== undefined && nodeKeys.has(pem);
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

// The seq and attemptId each relayed receipt claims, read without trusting them, so that what
// the checks will look up can be read from the store first (the checks themselves are pure
// and synchronous). A receipt that does not decode claims nothing; the checks reject it.
function claimedByReceipts(receipts: readonly Envelope[]): { seqs: number[]; attemptIds: string[] } {
  const seqs: number[] = [];
  const attemptIds: string[] = [];
  for (const e of receipts) {
    try {
      const p = JSON.parse(Buffer.from(e.payload, 'base64').toString('utf8')) as { seq?: unknown; attemptId?: unknown } | null;
      if (Number.isSafeInteger(p?.seq)) seqs.push(p!.seq as number);
      if (typeof p?.attemptId === 'string' && p.attemptId.length <= 128) attemptIds.push(p.attemptId);
    } catch {
      // not decodable: rejected by the checks
    }
  }
  return { seqs, attemptIds };
}

// A node as the store holds it now, with the stored receipts under the seqs `claims` names read ahead.
async function knownNode(tx: StoreTx, auth: NodeAuth, claims: { seqs: number[] }): Promise<KnownNode | null> {
  const nodeKey = parseNodeKey(auth.nodeId, auth.nodePublicKey);
  if (!nodeKey) return null;
  const stored = new Map<number, Envelope | null>();
  for (const seq of claims.seqs) if (!stored.has(seq)) stored.set(seq, await tx.receipts.envelope(auth.nodeId, seq));
  // Why lazy: most heartbeats relay no receipt, and a PEM parse costs more than a signature check.
  let helperKey: KeyObject | null | undefined;
  const parseHelperKey = (): KeyObject | null => {
    try {
      return parsePublicKey(auth.helperPublicKey);
    } catch {
      log('node=%s has an unparsable helper key in the store; its receipts are refused', auth.nodeId);
      return null;
    }
  };
  return {
    nodeId: auth.nodeId,
    nodeKey,
    helperKey: () => (helperKey === undefined ? (helperKey = parseHelperKey()) : helperKey),
    lastSeq: auth.lastSeq,
    storedReceipt: (seq) => stored.get(seq) ?? null,
  };
}

// The attempts the receipts claim, as the store holds them.
async function claimedAttempts(tx: StoreTx, claims: { attemptIds: string[] }): Promise<Map<string, AttemptRow | null>> {
  const out = new Map<string, AttemptRow | null>();
  for (const id of claims.attemptIds) if (!out.has(id)) out.set(id, await tx.runs.attempt(id));
  return out;
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
// the write transaction is fine: nothing here depends on state a heartbeat changes). A
// rejection's answer is final and changes nothing.
export async function openHeartbeatBody(store: ControlStore, body: Buffer): Promise<OpenedHeartbeatBody | { ok: false; answer: Answer }> {
  // The first pass takes the node key from memory; the nodeId it was asked for (the body's
  // claim, trusted only once the signature holds) is read from the store for a second pass
  // when memory had no key for it, or a key that did not verify (the node was re-keyed).
  let asked: string | null = null;
  let remembered = false;
  // The signature is checked in the thread pool: the main thread reads, records and commits
  // other heartbeats meanwhile (group-commit.ts keeps them in the order they arrived).
  const pass = async (pemOf: (nodeId: string) => string | undefined) => {
    let nodeKeyPem = '';
    const opened = await openHeartbeatInPool(body, (nodeId) => {
      asked = nodeId;
      const pem = pemOf(nodeId);
      const nodeKey = pem === undefined ? null : parseNodeKey(nodeId, pem);
      if (!nodeKey) return null;
      nodeKeyPem = pem!;
      return { nodeId, nodeKey };
    }, { maxBytes: MAX_BODY_BYTES });
    return { opened, nodeKeyPem };
  };
  let tried = await pass((nodeId) => {
    const pem = pemsOf(store).get(nodeId);
    remembered = pem !== undefined;
    return pem;
  });
  // Why only these two: every other rejection is the same whatever the node's key.
  const retry = !tried.opened.ok && asked !== null && (tried.opened.code === 'UNKNOWN_NODE' || (remembered && tried.opened.code === 'BAD_SIGNATURE'));
  if (retry) {
    const nodeId: string = asked!;
    const pem = (await store.read((tx) => tx.nodes.key(nodeId))) ?? undefined;
    rememberPem(store, nodeId, pem ?? null);
    tried = await pass((id) => (id === nodeId ? pem : undefined));
  }
  if (!tried.opened.ok) return { ok: false, answer: rejectionAnswer(tried.opened) };
  return { ok: true, body, heartbeat: tried.opened.heartbeat, nodeKeyPem: tried.nodeKeyPem };
}

// A node's clock skew refusal is recorded at most once a minute: a node that sends refused
// heartbeats in a tight loop costs one row update a minute, not one a heartbeat.
export const SKEW_REFUSAL_GAP_MS = 60_000;

// A heartbeat refused for clock skew: its node and skew (its sentAt minus the store's time).
// Only ever made after the node key's signature held and its seq was above the node's last
// accepted one, so no one but the node (or a replay of a heartbeat of it never accepted) makes
// one; what it holds is two numbers.
export interface SkewRefused {
  nodeId: string;
  skewMs: number;
}

// Records a clock skew refusal on its node (NodeWrites.recordClockSkewRefusal), at the store's
// time, at most once per SKEW_REFUSAL_GAP_MS a node.
export async function recordSkewRefusal(tx: StoreTx, r: SkewRefused): Promise<void> {
  if (await tx.nodes.recordClockSkewRefusal(r.nodeId, r.skewMs, await tx.now(), SKEW_REFUSAL_GAP_MS)) log('node=%s heartbeats refused for clock skew: recorded skewMs=%d', r.nodeId, r.skewMs);
}

// Finishes an opened heartbeat inside a write transaction, at the store's time. It reads the
// node as the transaction sees it, so an earlier heartbeat of the same node in this transaction
// counts. Writes nothing when it answers a rejection; `skewRefused` names a refusal for clock
// skew, for the caller to record once it undid this call's writes. `stored`: the receipts it
// stored; `counted`: how many of them count (verdicts a run waits for).
export async function recordOpenedHeartbeat(
  tx: StoreTx,
  store: ControlStore,
  opened: OpenedHeartbeatBody,
  heartbeatSeconds: number,
): Promise<{ answer: Answer; counted: number; stored: ReceiptPayload[]; skewRefused: SkewRefused | null }> {
  const now = await tx.now();
  const hbClaim = opened.heartbeat;
  const auth = await tx.nodes.auth(hbClaim.nodeId);
  const claims = claimedByReceipts(hbClaim.receipts);
  const known = auth ? await knownNode(tx, auth, claims) : null;
  const attempts = await claimedAttempts(tx, claims);
  const issued = (id: string) => attempts.get(id) ?? null;
  const sameKey = known !== null && auth!.nodePublicKey === opened.nodeKeyPem;
  // Why the full check again when the key differs: the node was removed or re-keyed since its
  // signature was checked, and the heartbeat must be judged as if it arrived now.
  if (!sameKey) rememberPem(store, hbClaim.nodeId, known ? auth!.nodePublicKey : null);
  const verdict = sameKey
    ? checkHeartbeat(hbClaim, known, issued, now)
    : verifyHeartbeat(opened.body, (id) => (id === hbClaim.nodeId ? known : null), issued, now, { maxBytes: MAX_BODY_BYTES });
  if (!verdict.ok) {
    // A CLOCK_SKEW's sentAt is the node's own word: the clock is checked after the signature
    // (under the key the store holds now) and the seq.
    const skewRefused = verdict.code === 'CLOCK_SKEW' ? { nodeId: hbClaim.nodeId, skewMs: hbClaim.sentAt - now } : null;
    return { answer: rejectionAnswer(verdict), counted: 0, stored: [], skewRefused };
  }
  const hb = verdict.heartbeat;
  await tx.nodes.recordHeartbeat(hb, now);
  await recordSignals(tx, store, hb, now);
  for (const r of verdict.receipts) await tx.receipts.insert(hb.nodeId, r, now);
  if (verdict.receipts.length) {
    log('node=%s stored receipts %s', hb.nodeId, verdict.receipts.map((r) => `seq=${r.payload.seq} ${r.payload.app} ${r.payload.outcome}${r.counts ? '' : ' (not counting)'}`).join(', '));
  }
  const answer: HeartbeatAnswer = { ackedSeqs: ackedSeqs(verdict), desired: await desiredFor(tx, hb.nodeId, now), heartbeatSeconds };
  return { answer: { status: 200, body: answer }, counted: verdict.receipts.filter((r) => r.counts).length, stored: verdict.receipts.map((r) => r.payload), skewRefused: null };
}
