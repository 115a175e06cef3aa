// The agent's reading of a control plane's heartbeat answers without zod (issue 8, row 5): zod
// alone is ~6.5 MB of an idle agent's RSS, and this is what the agent parses on every heartbeat.
// These accept exactly what heartbeatAnswerSchema and errorAnswerSchema of core/control-api.ts
// accept, and return what they would (test/agent/control-answer.test.ts holds both to the same
// verdicts, both ways). The body is hostile input: every field is checked before use.
import type { DesiredEntry, ErrorAnswer, HeartbeatAnswer } from '../core/control-api.js';
import { checkEnvelope } from '../core/envelope-check.js';
import { APP_NAME_RE, ATTEMPT_ID_RE } from '../core/name-checks.js';
import { isVersion } from '../core/version.js';
import { isEpoch, isInt, isObject, isString, onlyKeys, type Obj } from '../core/json-checks.js';

// Only `allowed` keys (zod's strictObject refuses any other, inherited ones aside).

// Why an answer was refused: where (a dotted path, '' for the body) and what.
export interface Refusal {
  where: string;
  message: string;
}

export type Read<T> = { ok: true; value: T } | ({ ok: false } & Refusal);

const refuse = (where: string, message: string): { ok: false } & Refusal => ({ ok: false, where, message });

// desiredEntrySchema: {app, version, attemptId, manifest, notAfter?}, nothing else.
function readDesired(v: unknown, where: string): Read<DesiredEntry> {
  if (!isObject(v) || !onlyKeys(v, ['app', 'version', 'attemptId', 'manifest', 'notAfter'])) return refuse(where, 'not a desired entry {app, version, attemptId, manifest, notAfter?}');
  if (typeof v.app !== 'string' || !APP_NAME_RE.test(v.app)) return refuse(`${where}.app`, 'app names are [a-z0-9][a-z0-9_-]{0,62}');
  if (!isVersion(v.version)) return refuse(`${where}.version`, 'versions are semver without build metadata (1.2.3 or 1.2.3-rc.1)');
  if (typeof v.attemptId !== 'string' || !ATTEMPT_ID_RE.test(v.attemptId)) return refuse(`${where}.attemptId`, 'attempt ids match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$');
  const manifest = checkEnvelope(v.manifest, `${where}.manifest`);
  if (!manifest.ok) return manifest;
  // An optional key present as undefined stays so (not from JSON, but the schema allows it).
  if ('notAfter' in v && v.notAfter !== undefined && !isEpoch(v.notAfter)) return refuse(`${where}.notAfter`, 'not a time in epoch milliseconds');
  const value: DesiredEntry = { app: v.app, version: v.version, attemptId: v.attemptId, manifest: manifest.value };
  if ('notAfter' in v) value.notAfter = v.notAfter as number | undefined;
  return { ok: true, value };
}

// A 200 answer to a heartbeat (heartbeatAnswerSchema).
export function readHeartbeatAnswer(v: unknown): Read<HeartbeatAnswer> {
  if (!isObject(v) || !onlyKeys(v, ['ackedSeqs', 'desired', 'heartbeatSeconds'])) return refuse('', 'not an object {ackedSeqs, desired, heartbeatSeconds}');
  const { ackedSeqs, desired, heartbeatSeconds } = v;
  if (!Array.isArray(ackedSeqs) || ackedSeqs.length > 4096) return refuse('ackedSeqs', 'not an array of at most 4096 seqs');
  for (let i = 0; i < ackedSeqs.length; i++) {
    if (!isInt(ackedSeqs[i], 1, Number.MAX_SAFE_INTEGER)) return refuse(`ackedSeqs.${i}`, 'not a positive safe integer');
  }
  if (!Array.isArray(desired) || desired.length > 256) return refuse('desired', 'not an array of at most 256 entries');
  const entries: DesiredEntry[] = [];
  for (let i = 0; i < desired.length; i++) {
    const e = readDesired(desired[i], `desired.${i}`);
    if (!e.ok) return e;
    entries.push(e.value);
  }
  if (!isInt(heartbeatSeconds, 1, 86_400)) return refuse('heartbeatSeconds', 'not an integer from 1 to 86400');
  return { ok: true, value: { ackedSeqs: [...ackedSeqs] as number[], desired: entries, heartbeatSeconds } };
}

// An error answer (errorAnswerSchema): unknown keys are dropped, as zod's z.object does.
export function readErrorAnswer(v: unknown): ErrorAnswer | null {
  if (!isObject(v) || !isObject(v.error)) return null;
  const { code, message } = v.error;
  if (!isString(code, 0, 64) || !isString(message, 0, 4096)) return null;
  const out: ErrorAnswer = { error: { code, message } };
  if ('lastSeq' in v && v.lastSeq !== undefined) {
    if (!isInt(v.lastSeq, 0, Number.MAX_SAFE_INTEGER)) return null;
    out.lastSeq = v.lastSeq;
  }
  if ('serverTime' in v && v.serverTime !== undefined) {
    if (!isInt(v.serverTime, 0, Number.MAX_SAFE_INTEGER)) return null;
    out.serverTime = v.serverTime;
  }
  return out;
}
