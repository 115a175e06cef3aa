// The agent's own state files checked without zod (issue 8, row 5: the agent reads these at
// every start, and a schema module read once keeps zod in its memory for good). Each accepts
// exactly what the zod schema beside it in test/agent/agent-file-checks.test.ts accepts and
// returns what it would; that test holds both to the same verdicts, both ways.
import { checkEnvelope } from '../core/envelope-check.js';
import { ATTEMPT_ID_RE } from '../core/name-checks.js';
import type { Envelope } from '../core/release-schemas.js';
import type { Checked } from '../platform/versioned-json.js';
import { isInt, isObject, onlyKeys, type Obj } from '../core/json-checks.js';

const refuse = (where: string, message: string): { ok: false; where: string; message: string } => ({ ok: false, where, message });

export const SEQ_SCHEMA_VERSION = 1;
export interface SeqFile {
  schemaVersion: typeof SEQ_SCHEMA_VERSION;
  lastSeq: number;
}

// seq.json: {schemaVersion: 1, lastSeq: a safe integer >= 0}, nothing else.
export function checkSeqFile(v: unknown): Checked<SeqFile> {
  if (!isObject(v) || !onlyKeys(v, ['schemaVersion', 'lastSeq'])) return refuse('', 'not an object {schemaVersion, lastSeq}');
  if (v.schemaVersion !== SEQ_SCHEMA_VERSION) return refuse('schemaVersion', `not ${SEQ_SCHEMA_VERSION}`);
  if (!isInt(v.lastSeq, 0, Number.MAX_SAFE_INTEGER)) return refuse('lastSeq', 'not a safe integer >= 0');
  return { ok: true, value: { schemaVersion: SEQ_SCHEMA_VERSION, lastSeq: v.lastSeq } };
}

export const ACTED_SCHEMA_VERSION = 1;
export interface ActedEntry {
  attemptId: string;
  app: string;
  at: number;
  answer: string;
}
export interface ActedFile {
  schemaVersion: typeof ACTED_SCHEMA_VERSION;
  acted: ActedEntry[];
}

// acted.json: {schemaVersion: 1, acted: [{attemptId, app (<= 64), at (epoch ms), answer (<= 64)}]}.
export function checkActedFile(v: unknown): Checked<ActedFile> {
  if (!isObject(v) || !onlyKeys(v, ['schemaVersion', 'acted'])) return refuse('', 'not an object {schemaVersion, acted}');
  if (v.schemaVersion !== ACTED_SCHEMA_VERSION) return refuse('schemaVersion', `not ${ACTED_SCHEMA_VERSION}`);
  if (!Array.isArray(v.acted)) return refuse('acted', 'not an array');
  const acted: ActedEntry[] = [];
  for (let i = 0; i < v.acted.length; i++) {
    const e: unknown = v.acted[i];
    const where = `acted.${i}`;
    if (!isObject(e) || !onlyKeys(e, ['attemptId', 'app', 'at', 'answer'])) return refuse(where, 'not an object {attemptId, app, at, answer}');
    if (typeof e.attemptId !== 'string' || !ATTEMPT_ID_RE.test(e.attemptId)) return refuse(`${where}.attemptId`, 'attempt ids match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$');
    if (typeof e.app !== 'string' || e.app.length > 64) return refuse(`${where}.app`, 'not a string of at most 64 characters');
    if (!isInt(e.at, 0, Number.MAX_SAFE_INTEGER)) return refuse(`${where}.at`, 'not a time in epoch ms');
    if (typeof e.answer !== 'string' || e.answer.length > 64) return refuse(`${where}.answer`, 'not a string of at most 64 characters');
    acted.push({ attemptId: e.attemptId, app: e.app, at: e.at, answer: e.answer });
  }
  return { ok: true, value: { schemaVersion: ACTED_SCHEMA_VERSION, acted } };
}

export const OUTBOX_SCHEMA_VERSION = 1;
export interface OutboxFile {
  schemaVersion: typeof OUTBOX_SCHEMA_VERSION;
  helperKeyId: string | null;
  highestSeq: number;
  pending: Envelope[];
}

// outbox.json (core/outbox-schema.ts): {schemaVersion: 1, helperKeyId: 16 lowercase hex or null,
// highestSeq: a safe integer >= 0, pending: envelopes}; the order of `pending` is Outbox's to check.
export function checkOutboxFile(v: unknown): Checked<OutboxFile> {
  if (!isObject(v) || !onlyKeys(v, ['schemaVersion', 'helperKeyId', 'highestSeq', 'pending'])) return refuse('', 'not an object {schemaVersion, helperKeyId, highestSeq, pending}');
  if (v.schemaVersion !== OUTBOX_SCHEMA_VERSION) return refuse('schemaVersion', `not ${OUTBOX_SCHEMA_VERSION}`);
  if (v.helperKeyId !== null && (typeof v.helperKeyId !== 'string' || !/^[0-9a-f]{16}$/.test(v.helperKeyId))) return refuse('helperKeyId', 'not 16 lowercase hex characters or null');
  if (!isInt(v.highestSeq, 0, Number.MAX_SAFE_INTEGER)) return refuse('highestSeq', 'not a safe integer >= 0');
  if (!Array.isArray(v.pending)) return refuse('pending', 'not an array');
  const pending: Envelope[] = [];
  for (let i = 0; i < v.pending.length; i++) {
    const e = checkEnvelope(v.pending[i], `pending.${i}`);
    if (!e.ok) return e;
    pending.push(e.value);
  }
  return { ok: true, value: { schemaVersion: OUTBOX_SCHEMA_VERSION, helperKeyId: v.helperKeyId, highestSeq: v.highestSeq, pending } };
}

export const ENROLLMENT_SCHEMA_VERSION = 1;
export interface EnrollmentFile {
  schemaVersion: typeof ENROLLMENT_SCHEMA_VERSION;
  nodeId: string;
  controlPlaneUrl: string;
  enrolledAt: number;
  heartbeatSeconds: number;
  nodeKeyId: string;
}

// zod's z.string().url() as this zod (4.x) has it: what URL parses once trimmed; the value is
// the trimmed string without tabs and newlines.
function checkUrl(v: unknown): string | null {
  if (typeof v !== 'string') return null;
  const trimmed = v.trim();
  return URL.canParse(trimmed) ? trimmed.replace(/[\t\n\r]/g, '') : null;
}

// enrollment.json (enrollment-schema.ts): nodeId 1..128, controlPlaneUrl a URL, enrolledAt epoch
// ms, heartbeatSeconds 1..86400, nodeKeyId 16 lowercase hex, nothing else.
export function checkEnrollmentFile(v: unknown): Checked<EnrollmentFile> {
  const keys = ['schemaVersion', 'nodeId', 'controlPlaneUrl', 'enrolledAt', 'heartbeatSeconds', 'nodeKeyId'];
  if (!isObject(v) || !onlyKeys(v, keys)) return refuse('', `not an object {${keys.join(', ')}}`);
  if (v.schemaVersion !== ENROLLMENT_SCHEMA_VERSION) return refuse('schemaVersion', `not ${ENROLLMENT_SCHEMA_VERSION}`);
  if (typeof v.nodeId !== 'string' || v.nodeId.length < 1 || v.nodeId.length > 128) return refuse('nodeId', 'not a string of 1 to 128 characters');
  const url = checkUrl(v.controlPlaneUrl);
  if (url === null) return refuse('controlPlaneUrl', 'not a URL');
  if (!isInt(v.enrolledAt, 0, Number.MAX_SAFE_INTEGER)) return refuse('enrolledAt', 'not a time in epoch ms');
  if (!isInt(v.heartbeatSeconds, 1, 86_400)) return refuse('heartbeatSeconds', 'not an integer from 1 to 86400');
  if (typeof v.nodeKeyId !== 'string' || !/^[0-9a-f]{16}$/.test(v.nodeKeyId)) return refuse('nodeKeyId', 'not 16 lowercase hex characters');
  return {
    ok: true,
    value: { schemaVersion: ENROLLMENT_SCHEMA_VERSION, nodeId: v.nodeId, controlPlaneUrl: url, enrolledAt: v.enrolledAt, heartbeatSeconds: v.heartbeatSeconds, nodeKeyId: v.nodeKeyId },
  };
}
