// A receipt payload (DESIGN §6) checked without zod (issue 8, row 5: the agent verifies each new
// receipt the helper lists, and would otherwise load zod for it). Accepts exactly what
// receiptPayloadSchema of receipt-schema.ts accepts and returns what it would
// (test/core/receipt-check.test.ts holds both to the same verdicts, both ways).
import { APP_NAME_RE, ATTEMPT_ID_RE, INTEGRITY_RE } from './name-checks.js';
import type { ReceiptPayload } from './receipt-schema.js';
import { isVersion } from './version.js';
import { isEpoch, isObject, type Obj } from './json-checks.js';

const isStr = (v: unknown, max: number): v is string => typeof v === 'string' && v.length <= max;
const KEYS = ['v', 'nodeId', 'app', 'attemptId', 'seq', 'fromVersion', 'targetVersion', 'integrity', 'outcome', 'startedAt', 'updatedAt', 'retryAfter', 'rollbackHealthy', 'reason', 'logFile'];
// The terminal outcomes a receipt records (receipt-schema.ts re-exports this list).
export const RECEIPT_OUTCOMES = ['active', 'rolled-back', 'failed', 'refused'] as const;
const OUTCOMES: readonly unknown[] = RECEIPT_OUTCOMES;

// `v` as a receipt payload, or null when receiptPayloadSchema would refuse it.
export function checkReceiptPayload(v: unknown): ReceiptPayload | null {
  if (!isObject(v) || !Object.keys(v).every((k) => KEYS.includes(k))) return null;
  if (v.v !== 1) return null;
  if (v.nodeId !== null && !isStr(v.nodeId, 128)) return null;
  if (typeof v.app !== 'string' || !APP_NAME_RE.test(v.app)) return null;
  if (typeof v.attemptId !== 'string' || !ATTEMPT_ID_RE.test(v.attemptId)) return null;
  if (!Number.isSafeInteger(v.seq) || (v.seq as number) < 1) return null;
  if (v.fromVersion !== null && !isVersion(v.fromVersion)) return null;
  if (v.targetVersion !== null && !isVersion(v.targetVersion)) return null;
  if (v.integrity !== null && (typeof v.integrity !== 'string' || !INTEGRITY_RE.test(v.integrity))) return null;
  if (!OUTCOMES.includes(v.outcome)) return null;
  if (!isEpoch(v.startedAt) || !isEpoch(v.updatedAt)) return null;
  const out: Obj = {
    v: 1,
    nodeId: v.nodeId,
    app: v.app,
    attemptId: v.attemptId,
    seq: v.seq,
    fromVersion: v.fromVersion,
    targetVersion: v.targetVersion,
    integrity: v.integrity,
    outcome: v.outcome,
    startedAt: v.startedAt,
    updatedAt: v.updatedAt,
  };
  // Optional keys: absent (or undefined) stays absent.
  if (v.retryAfter !== undefined) {
    if (!isEpoch(v.retryAfter)) return null;
    out.retryAfter = v.retryAfter;
  }
  if (v.rollbackHealthy !== undefined) {
    if (typeof v.rollbackHealthy !== 'boolean') return null;
    out.rollbackHealthy = v.rollbackHealthy;
  }
  if (v.reason !== undefined) {
    const r = v.reason;
    if (!isObject(r) || !Object.keys(r).every((k) => k === 'code' || k === 'message') || !isStr(r.code, 64) || !isStr(r.message, 2048)) return null;
    out.reason = { code: r.code, message: r.message };
  }
  if (v.logFile !== undefined) {
    if (!isStr(v.logFile, 4096)) return null;
    out.logFile = v.logFile;
  }
  // Only a refused receipt may lack targetVersion.
  if (v.outcome !== 'refused' && v.targetVersion === null) return null;
  return out as unknown as ReceiptPayload;
}
