// The agent's own state files checked without zod (issue 8, row 5: the agent reads these at
// every start, and a schema module read once keeps zod in its memory for good). Each accepts
// exactly what the zod schema beside it in test/agent/agent-file-checks.test.ts accepts and
// returns what it would; that test holds both to the same verdicts, both ways.
import { ATTEMPT_ID_RE } from '../core/name-checks.js';
import type { Checked } from '../platform/versioned-json.js';

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isInt = (v: unknown, min: number, max: number): v is number => Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max;
const onlyKeys = (o: Obj, allowed: readonly string[]) => Object.keys(o).every((k) => allowed.includes(k));
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
