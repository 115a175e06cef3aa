// `POST /v1/enroll` (docs/design.md §6): a node proves it holds the node key and the helper key named in
// its payload and spends a single-use token; the store gains the node and its helper key in one
// transaction.
import { randomBytes, type KeyObject } from 'node:crypto';
import { enrollBodySchema, enrollPayloadSchema } from '../../core/control-api.js';
import { enrollmentLabels } from '../../core/labels.js';
import { DOMAINS, keyIdOf, openEnvelope, parsePublicKey, verifyEnvelopeBytes } from '../../platform/keys.js';
import { logger } from '../../platform/log.js';
import { rememberEnrolledNode } from '../heartbeat/accept-heartbeat.js';
import { errorAnswer, type Answer } from '../server/answer.js';
import type { ControlStore } from '../store/store.js';
import { hashToken } from './tokens.js';

const log = logger('control:enroll');
const utf8 = new TextDecoder('utf-8', { fatal: true });

// A new nodeId: `n-` and 12 random hex characters. Random rather than derived from the node key,
// so a host that re-enrolls with the same key still gets a fresh identity and seq space.
export function newNodeId(): string {
  return 'n-' + randomBytes(6).toString('hex');
}

function parseKey(pem: unknown): KeyObject | null {
  if (typeof pem !== 'string' || pem.length > 4096) return null;
  try {
    return parsePublicKey(pem);
  } catch {
    return null;
  }
}

// Checks one enrollment body and enrolls the node. The payload is parsed first only to find the
// key to verify it with; nothing else in it is trusted before that signature holds.
export async function enrollNode(store: ControlStore, body: Buffer, heartbeatSeconds: number): Promise<Answer> {
  let json: unknown;
  try {
    json = JSON.parse(utf8.decode(body));
  } catch {
    return errorAnswer(400, 'BAD_BODY', 'enrollment body is not valid UTF-8 JSON');
  }
  const env = enrollBodySchema.safeParse(json);
  if (!env.success) return errorAnswer(400, 'BAD_BODY', 'enrollment body is not a signature envelope {payload, sig, keyId, helperSig}');
  let claimed: unknown;
  try {
    claimed = (JSON.parse(utf8.decode(Buffer.from(env.data.payload, 'base64'))) as { nodePublicKey?: unknown } | null)?.nodePublicKey;
  } catch {
    return errorAnswer(400, 'BAD_BODY', 'enrollment payload does not decode to JSON');
  }
  const nodeKey = parseKey(claimed);
  if (!nodeKey) return errorAnswer(400, 'BAD_BODY', 'enrollment nodePublicKey is not an Ed25519 public key (PEM)');
  const opened = openEnvelope(env.data, DOMAINS.enroll, new Map([[keyIdOf(nodeKey), nodeKey]]));
  if (!opened.ok) {
    if (opened.reason === 'bad-encoding' || opened.reason === 'bad-json') return errorAnswer(400, 'BAD_BODY', `enrollment envelope is malformed (${opened.reason})`);
    return errorAnswer(401, 'BAD_SIGNATURE', `enrollment is not signed by its nodePublicKey under ${DOMAINS.enroll} (${opened.reason})`);
  }
  const parsed = enrollPayloadSchema.safeParse(opened.payload);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return errorAnswer(400, 'BAD_BODY', `enrollment payload does not match the schema (${issue ? `${issue.path.join('.') || '(payload)'}: ${issue.message}` : 'invalid'})`);
  }
  const p = parsed.data;
  const helperKey = parseKey(p.helperPublicKey);
  if (!helperKey) return errorAnswer(400, 'BAD_BODY', 'enrollment helperPublicKey is not an Ed25519 public key (PEM)');
  const proof = checkHelperProof(env.data.helperSig, opened.bytes, helperKey);
  if (proof) {
    log('enrollment refused hostname=%s helperKey=%s: %s', JSON.stringify(p.hostname), keyIdOf(helperKey), proof);
    return errorAnswer(401, 'BAD_SIGNATURE', proof);
  }

  const nodeId = newNodeId();
  // The node's labels: its token's (the operator's), and what it proposed under claimed.<key>.
  const tooMany = Symbol('too many labels');
  let enrolled: boolean | typeof tooMany;
  try {
    enrolled = await store.write(async (tx) => {
      const now = await tx.now();
      const tokenLabels = await tx.tokens.spend(hashToken(p.token), now, nodeId);
      if (tokenLabels === null) return false;
      const labels = enrollmentLabels(tokenLabels, p.labels ?? {});
      // Thrown, so that the token stays unspent.
      if (labels === null) throw tooMany;
      await tx.nodes.insert({ nodeId, hostname: p.hostname, nodePublicKey: p.nodePublicKey, helperPublicKey: p.helperPublicKey, enrolledAt: now, labels });
      return true;
    });
  } catch (err) {
    if (err !== tooMany) throw err;
    enrolled = tooMany;
  }
  if (enrolled === tooMany) return errorAnswer(400, 'BAD_BODY', 'the token\'s labels and the ones this node proposes are more than 32 together; propose fewer');
  if (!enrolled) {
    log('enrollment refused hostname=%s: token unknown, used, revoked or expired', JSON.stringify(p.hostname));
    return errorAnswer(401, 'TOKEN_INVALID', 'the enrollment token is unknown, already used, revoked or expired');
  }
  // Why: the node's first heartbeat follows at once, and needs this key. (The same text as
  // `claimed`, the one nodeKey was parsed from; checked, as a PEM must never map to another key.)
  if (claimed === p.nodePublicKey) rememberEnrolledNode(store, nodeId, p.nodePublicKey, nodeKey);
  log('enrolled node=%s hostname=%s nodeKey=%s helperKey=%s claimedLabels=%d', nodeId, JSON.stringify(p.hostname), keyIdOf(nodeKey), keyIdOf(helperKey), Object.keys(p.labels ?? {}).length);
  return { status: 200, body: { nodeId, heartbeatSeconds } };
}

// Why the enrollment does not prove the helper key, or null when it does: `helperSig` must be the
// helper key's signature over the very payload bytes the node key signed (docs/design.md §6, issue 15).
// Checked before the token is spent, so a refused enrollment leaves the token usable.
function checkHelperProof(helperSig: string | undefined, payload: Buffer, helperKey: KeyObject): string | null {
  if (helperSig === undefined) {
    return `enrollment carries no helperSig, the signature of helperPublicKey under ${DOMAINS.enrollHelper} that proves the host holds the helper key (agentctl older than this control plane? upgrade steward on the host)`;
  }
  const checked = verifyEnvelopeBytes({ payload: payload.toString('base64'), sig: helperSig, keyId: keyIdOf(helperKey) }, payload, DOMAINS.enrollHelper, new Map([[keyIdOf(helperKey), helperKey]]));
  return checked.ok ? null : `enrollment helperSig is not a signature of its helperPublicKey (keyId ${keyIdOf(helperKey)}) under ${DOMAINS.enrollHelper} over the payload (${checked.reason}): the host does not prove it holds that helper key`;
}
