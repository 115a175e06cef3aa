import { isReasonCode, type ReasonCode } from '../core/errors.js';
import type { ProgressEvent } from './schemas.js';

// The client's reading of the helper's answer lines (DESIGN §7), without zod: the CLI's
// start-up path must not load it (zod alone was ~100 ms of CPU of each `agentctl status`,
// bench/status-cli). These accept exactly what progressEventSchema and responseSchema of
// schemas.ts accept, and return what they would (test/protocol/answer.test.ts holds both
// to the same verdicts). A line is hostile input: every field is checked before use.

export type Answer =
  | { ok: true; result: unknown }
  | { ok: false; error: { code: ReasonCode; message: string; attemptId?: string } };

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
// idSchema: a string of at most 128 characters or a safe integer; here also null.
const isId = (v: unknown) => v === null || (typeof v === 'string' && v.length <= 128) || Number.isSafeInteger(v);
const isFiniteNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

// A progress event, its unknown keys dropped; null when `v` is not one.
export function readProgressEvent(v: unknown): ProgressEvent | null {
  if (!isObject(v) || !('id' in v) || !isId(v.id) || v.event !== 'progress') return null;
  if (typeof v.attemptId !== 'string' || typeof v.phase !== 'string') return null;
  if (v.bytes !== undefined && !isFiniteNumber(v.bytes)) return null;
  if (v.total !== undefined && !isFiniteNumber(v.total)) return null;
  const ev: ProgressEvent = { id: v.id as ProgressEvent['id'], event: 'progress', attemptId: v.attemptId, phase: v.phase };
  if (v.bytes !== undefined) ev.bytes = v.bytes as number;
  if (v.total !== undefined) ev.total = v.total as number;
  return ev;
}

// A final answer line; null when `v` is not one.
export function readAnswer(v: unknown): Answer | null {
  if (!isObject(v) || !('id' in v) || !isId(v.id)) return null;
  // zod's z.unknown() still wants the key present.
  if (v.ok === true) return 'result' in v ? { ok: true, result: v.result } : null;
  if (v.ok !== false || !isObject(v.error)) return null;
  const { code, message, attemptId } = v.error;
  if (typeof code !== 'string' || !isReasonCode(code) || typeof message !== 'string') return null;
  if (attemptId !== undefined && typeof attemptId !== 'string') return null;
  return { ok: false, error: attemptId === undefined ? { code, message } : { code, message, attemptId } };
}
