// The control plane's check of one `POST /v1/heartbeat` body (docs/design.md §6), pure: the body, the
// node and attempt lookups and the clock go in; a verdict comes out. No I/O, no Date.now.
// Nothing in the body is trusted before the node key's signature over its payload bytes holds.
import type { KeyObject } from 'node:crypto';
import * as z from '../../core/zod-mini.js';
import { formatIssues } from '../../core/format-issues.js';
import { keyIdSchema, stringSchema } from '../../core/names.js';
import { heartbeatPayloadSchema, type HeartbeatPayload } from '../../core/heartbeat-schema.js';
import { receiptPayloadSchema, type ReceiptPayload } from '../../core/receipt-schema.js';
import type { Envelope } from '../../core/release-schemas.js';
import { DOMAINS, keyIdOf, openEnvelope, strictBase64, verifyEnvelopeBytes, verifyEnvelopeBytesInPool, type VerifiedBytes } from '../../platform/keys.js';
import { hasNul } from '../../core/nul.js';

export const DEFAULT_MAX_HEARTBEAT_BYTES = 1024 * 1024;
export const DEFAULT_CLOCK_SKEW_MS = 5 * 60 * 1000;

// A node as the store knows it. `lastSeq` is the highest heartbeat seq accepted (0 before the
// first); `storedReceipt` the envelope of this node's receipt already stored under a seq, or null.
export interface KnownNode {
  nodeId: string;
  nodeKey: KeyObject;
  // The helper key that signs this node's receipts, parsed only when a heartbeat relays one (most
  // carry none, and parsing a PEM costs more than verifying a signature); null when unusable.
  helperKey: () => KeyObject | null;
  lastSeq: number;
  storedReceipt: (seq: number) => Envelope | null;
}

// One attemptId a run of the control plane issued, to one node for one version of one app.
export interface RunAttempt {
  attemptId: string;
  nodeId: string;
  app: string;
  version: string;
}

// `counts`: the receipt carries an attemptId a run issued to this node for this app and version,
// so it may be that run's verdict (the planner still takes only its own run's, docs/design.md §9). A
// receipt that does not count (an operator's manual update, an attempt no run issued, a receipt
// made before enrollment) is still stored and acked: the agent relays every receipt, and refusing
// one would wedge its outbox. A receipt that claims a run's attemptId but contradicts that issue
// (another node, app or version) is no honest agent's and rejects the heartbeat.
export interface VerifiedReceipt {
  envelope: Envelope;
  payload: ReceiptPayload;
  counts: boolean;
}

export type HeartbeatRejectCode = 'BAD_BODY' | 'UNKNOWN_NODE' | 'BAD_SIGNATURE' | 'SEQ_REPLAYED' | 'CLOCK_SKEW' | 'RECEIPT_REJECTED';

// ok: the heartbeat to record, the receipts to store (new ones only, in body order) and the seqs
// of receipts already stored or repeated in the body, which are acknowledged and not stored again.
export type HeartbeatVerdict =
  | { ok: true; heartbeat: HeartbeatPayload; receipts: VerifiedReceipt[]; duplicateSeqs: number[] }
  | {
      ok: false;
      status: 400 | 401 | 409 | 422;
      code: HeartbeatRejectCode;
      message: string;
      lastSeq?: number;
      serverTime?: number;
    };

export interface VerifyHeartbeatOptions {
  maxBytes?: number;
  skewMs?: number;
}

// The outer envelope: the body limit already bounds the payload, so no tighter cap here
// (envelopeSchema's 48 KiB would refuse a heartbeat carrying 64 receipts).
export const heartbeatEnvelopeSchema = z.strictObject({
  payload: z.string().check(z.minLength(1)),
  sig: stringSchema(1, 256),
  keyId: keyIdSchema,
});

const utf8 = new TextDecoder('utf-8', { fatal: true });

export type HeartbeatRejection = Extract<HeartbeatVerdict, { ok: false }>;
type Rejection = HeartbeatRejection;

function reject(status: Rejection['status'], code: HeartbeatRejectCode, message: string, extra: { lastSeq?: number; serverTime?: number } = {}): Rejection {
  return { ok: false, status, code, message, ...extra };
}

// The payload's bytes parsed, and the nodeId they claim, read before any signature is checked
// so the node's key can be looked up. Untrusted until the signature over these bytes holds:
// before that only the nodeId is used, for that lookup.
function claimOf(bytes: Buffer): { nodeId: string; json: unknown } | null {
  try {
    const json: unknown = JSON.parse(utf8.decode(bytes));
    const claimed = (json as { nodeId?: unknown } | null)?.nodeId;
    return typeof claimed === 'string' && claimed.length > 0 && claimed.length <= 128 ? { nodeId: claimed, json } : null;
  } catch {
    return null;
  }
}

// Checks one heartbeat body in the order of docs/design.md §6: size, JSON, envelope, node, signature,
// schema, seq, clock, then every receipt. Any receipt whose signature, helper key or nodeId does
// not match rejects the heartbeat whole, so the caller stores nothing of it.
export function verifyHeartbeat(
  body: Buffer,
  lookupNode: (nodeId: string) => KnownNode | null,
  // The attempt a run issued under this attemptId, of any run the store remembers, or null.
  issued: (attemptId: string) => RunAttempt | null,
  now: number,
  opts: VerifyHeartbeatOptions = {},
): HeartbeatVerdict {
  const opened = openHeartbeat(body, lookupNode, opts);
  if (!opened.ok) return opened;
  return checkHeartbeat(opened.heartbeat, opened.node, issued, now, opts);
}

// What openHeartbeat needs of a node: its id and its key.
export type NodeKey = Pick<KnownNode, 'nodeId' | 'nodeKey'>;

// A heartbeat whose node key signature holds, and the node it was checked against.
export type OpenedHeartbeat<N extends NodeKey = NodeKey> = { ok: true; heartbeat: HeartbeatPayload; node: N } | Rejection;

// The steps of verifyHeartbeat that need only the node's key, not its state: size, JSON,
// envelope, node, signature, schema. They are most of a heartbeat's CPU, so the control plane
// runs them before it takes the write lock (see group-commit.ts).
export function openHeartbeat<N extends NodeKey>(body: Buffer, lookupNode: (nodeId: string) => N | null, opts: VerifyHeartbeatOptions = {}): OpenedHeartbeat<N> {
  const claimed = claimHeartbeat(body, lookupNode, opts);
  if (!claimed.ok) return claimed;
  return afterSignature(claimed, verifyEnvelopeBytes(claimed.envelope, claimed.strict, DOMAINS.heartbeat, keysOf(claimed.node)));
}

// openHeartbeat with the signature checked in libuv's thread pool: the same steps in the same
// order and the same verdicts, but the caller's thread is free while the signature is checked
// (Ed25519's verify is most of a heartbeat's CPU: the server's main thread keeps HTTP and SQLite).
export async function openHeartbeatInPool<N extends NodeKey>(body: Buffer, lookupNode: (nodeId: string) => N | null, opts: VerifyHeartbeatOptions = {}): Promise<OpenedHeartbeat<N>> {
  const claimed = claimHeartbeat(body, lookupNode, opts);
  if (!claimed.ok) return claimed;
  return afterSignature(claimed, await verifyEnvelopeBytesInPool(claimed.envelope, claimed.strict, DOMAINS.heartbeat, keysOf(claimed.node)));
}

// A body up to its signature: its envelope, the payload's bytes when they are strict base64, the
// JSON they parse to (untrusted), and the node the payload claims.
type Claimed<N extends NodeKey> = { ok: true; envelope: Envelope; strict: Buffer | null; json: unknown; node: N };

function keysOf(node: NodeKey): Map<string, KeyObject> {
  return new Map([[keyIdOf(node.nodeKey), node.nodeKey]]);
}

// Size, JSON, envelope, node: every step before the signature.
function claimHeartbeat<N extends NodeKey>(body: Buffer, lookupNode: (nodeId: string) => N | null, opts: VerifyHeartbeatOptions): Claimed<N> | Rejection {
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_HEARTBEAT_BYTES;
  if (body.length > maxBytes) return reject(400, 'BAD_BODY', `heartbeat body is ${body.length} bytes, over the limit of ${maxBytes}`);
  let json: unknown;
  try {
    json = JSON.parse(utf8.decode(body));
  } catch {
    return reject(400, 'BAD_BODY', 'heartbeat body is not valid UTF-8 JSON');
  }
  const outer = heartbeatEnvelopeSchema.safeParse(json);
  // Sliced: the key names are the sender's, and an error answer's message stays under 4096.
  if (!outer.success) return reject(400, 'BAD_BODY', `heartbeat body is not a signature envelope {payload, sig, keyId}: ${formatIssues(outer.error.issues).slice(0, 1024)}`);
  const envelope = outer.data;

  // The payload is decoded and parsed once. Why the lenient decode when it is not strict base64:
  // the claimed nodeId is read as before (an unknown node is still 401), and the strict check
  // below then answers 400.
  const strict = strictBase64(envelope.payload);
  const claim = claimOf(strict ?? Buffer.from(envelope.payload, 'base64'));
  if (claim === null) return reject(400, 'BAD_BODY', 'heartbeat payload does not decode to an object with a nodeId');
  const nodeId = claim.nodeId;
  // A nodeId with a NUL is no enrolled node's (ids are `n-<hex>`), and never reaches the store
  // (PostgreSQL would fail on it): 401 on both backends.
  const node = hasNul(nodeId) ? null : lookupNode(nodeId);
  if (!node || node.nodeId !== nodeId) return reject(401, 'UNKNOWN_NODE', `node ${JSON.stringify(nodeId)} is not enrolled`);
  return { ok: true, envelope, strict, json: claim.json, node };
}

// The signature's verdict, then the schema: every step after the signature.
function afterSignature<N extends NodeKey>(claimed: Claimed<N>, checked: VerifiedBytes): OpenedHeartbeat<N> {
  const { node } = claimed;
  const nodeId = node.nodeId;
  if (!checked.ok) {
    if (checked.reason === 'bad-encoding') return reject(400, 'BAD_BODY', `heartbeat envelope of node ${nodeId} is not strict base64`);
    return reject(401, 'BAD_SIGNATURE', `heartbeat of node ${nodeId} is not signed by its node key under ${DOMAINS.heartbeat} (${checked.reason})`);
  }

  // The signature holds over the bytes `claimed.json` was parsed from: it is the payload now
  // (parsing them again would give the same value; docs/design.md §6's "verify before trusting" holds).
  const parsed = heartbeatPayloadSchema.safeParse(claimed.json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue ? `${issue.path.join('.') || '(payload)'}: ${issue.message}` : 'invalid';
    return reject(400, 'BAD_BODY', `heartbeat of node ${nodeId} does not match the schema (${where})`);
  }
  const heartbeat = parsed.data;
  // The same bytes were parsed twice; the lookup key and the signed nodeId must agree.
  if (heartbeat.nodeId !== node.nodeId) return reject(401, 'BAD_SIGNATURE', `heartbeat nodeId does not match node ${node.nodeId}`);
  return { ok: true, heartbeat, node };
}

// The steps of verifyHeartbeat that read the node's state: seq, clock, then every receipt.
// `node` must be the node the heartbeat was opened against (same nodeId and key), as it is now.
export function checkHeartbeat(
  heartbeat: HeartbeatPayload,
  node: KnownNode,
  issued: (attemptId: string) => RunAttempt | null,
  now: number,
  opts: VerifyHeartbeatOptions = {},
): HeartbeatVerdict {
  const skewMs = opts.skewMs ?? DEFAULT_CLOCK_SKEW_MS;
  const nodeId = node.nodeId;
  if (heartbeat.seq <= node.lastSeq) {
    return reject(409, 'SEQ_REPLAYED', `heartbeat seq=${heartbeat.seq} of node ${nodeId} is not above lastSeq=${node.lastSeq}`, { lastSeq: node.lastSeq });
  }
  if (Math.abs(heartbeat.sentAt - now) > skewMs) {
    return reject(422, 'CLOCK_SKEW', `heartbeat of node ${nodeId} was sent at ${heartbeat.sentAt}, more than ${skewMs} ms from ${now}`, { serverTime: now });
  }

  const receipts = verifyRelayedReceipts(heartbeat, node, issued);
  if (!receipts.ok) return receipts;
  return { ok: true, heartbeat, receipts: receipts.fresh, duplicateSeqs: receipts.duplicateSeqs };
}

// Every relayed receipt must verify under the node's helper key, name this node (or no node:
// made before enrollment) and agree with the issue its attemptId names, if a run issued it. All
// are checked before any is classified, so a forged receipt reusing a stored seq still rejects
// the heartbeat. A seq already stored (or repeated in the body) with the same envelope is a
// resend after a lost answer: acked, not stored again; with another envelope it is rejected.
function verifyRelayedReceipts(
  heartbeat: HeartbeatPayload,
  node: KnownNode,
  issued: (attemptId: string) => RunAttempt | null,
): Rejection | { ok: true; fresh: VerifiedReceipt[]; duplicateSeqs: number[] } {
  if (heartbeat.receipts.length === 0) return { ok: true, fresh: [], duplicateSeqs: [] };
  const helperKey = node.helperKey();
  if (!helperKey) return reject(401, 'UNKNOWN_NODE', `node ${node.nodeId} has no usable helper key in the store to check its receipts with`);
  const helperKeys = new Map([[keyIdOf(helperKey), helperKey]]);
  const verified: Array<{ envelope: Envelope; payload: ReceiptPayload; attempt: RunAttempt | null }> = [];
  for (const [i, envelope] of heartbeat.receipts.entries()) {
    const opened = openEnvelope(envelope, DOMAINS.receipt, helperKeys);
    if (!opened.ok) {
      return reject(400, 'RECEIPT_REJECTED', `receipt ${i} of node ${node.nodeId} is not signed by its helper key under ${DOMAINS.receipt} (${opened.reason})`);
    }
    const payload = receiptPayloadSchema.safeParse(opened.payload);
    if (!payload.success) return reject(400, 'RECEIPT_REJECTED', `receipt ${i} of node ${node.nodeId} does not match the receipt schema`);
    const p = payload.data;
    if (p.nodeId !== null && p.nodeId !== node.nodeId) {
      return reject(400, 'RECEIPT_REJECTED', `receipt ${i} (seq=${p.seq}) names node ${p.nodeId}, not ${node.nodeId}`);
    }
    const attempt = issued(p.attemptId);
    const conflict = attempt ? issueConflict(p, attempt, node.nodeId) : null;
    if (conflict) return reject(400, 'RECEIPT_REJECTED', `receipt ${i} (seq=${p.seq}) of node ${node.nodeId} carries attemptId ${p.attemptId}, which a run issued ${conflict}`);
    verified.push({ envelope, payload: p, attempt });
  }

  const fresh: VerifiedReceipt[] = [];
  const duplicateSeqs: number[] = [];
  const seen = new Map<number, Envelope>();
  for (const r of verified) {
    const seq = r.payload.seq;
    const before = seen.get(seq) ?? node.storedReceipt(seq);
    if (before) {
      if (!sameEnvelope(before, r.envelope)) {
        return reject(400, 'RECEIPT_REJECTED', `receipt seq=${seq} of node ${node.nodeId} differs from the receipt already stored under that seq`);
      }
      duplicateSeqs.push(seq);
      continue;
    }
    seen.set(seq, r.envelope);
    fresh.push({ envelope: r.envelope, payload: r.payload, counts: r.attempt !== null && r.payload.nodeId === node.nodeId });
  }
  return { ok: true, fresh, duplicateSeqs };
}

// How a receipt contradicts the issue its attemptId names, or null when it agrees. A refusal
// without a targetVersion (the helper refused before it learnt one) agrees on the version.
function issueConflict(p: ReceiptPayload, attempt: RunAttempt, nodeId: string): string | null {
  if (attempt.nodeId !== nodeId) return `to node ${attempt.nodeId}`;
  if (attempt.app !== p.app) return `for app ${attempt.app}, not ${p.app}`;
  if (p.targetVersion !== null && p.targetVersion !== attempt.version) return `for ${attempt.app} ${attempt.version}, not ${p.targetVersion}`;
  return null;
}

function sameEnvelope(a: Envelope, b: Envelope): boolean {
  return a.payload === b.payload && a.sig === b.sig && a.keyId === b.keyId;
}

// The receipt seqs the 200 answer acknowledges: stored now or stored before. None on a rejection.
export function ackedSeqs(verdict: HeartbeatVerdict): number[] {
  if (!verdict.ok) return [];
  return [...new Set([...verdict.receipts.map((r) => r.payload.seq), ...verdict.duplicateSeqs])].sort((a, b) => a - b);
}
