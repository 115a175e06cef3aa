// What a control plane's answer to one heartbeat means for the agent, pure (docs/design.md §6 and
// src/core/control-api.ts). Anything unexpected is `unavailable`, never a crash.
import { errorAnswerSchema, heartbeatAnswerSchema, type HeartbeatAnswer } from '../core/control-api.js';
import { formatIssues } from '../core/format-issues.js';
import { MAX_ADOPTED_SEQ, MAX_DATE_MS } from '../core/heartbeat-limits.js';

export type HeartbeatOutcome =
  | { kind: 'ok'; answer: HeartbeatAnswer }
  // 409: the control plane has seen `lastSeq`; jump past it and send again.
  | { kind: 'replayed'; lastSeq: number; message: string }
  // 422: our clock is off; `serverTime` is the control plane's.
  | { kind: 'clock-skew'; serverTime: number | null; message: string }
  // 401: unknown node, or the node key does not match the enrolled one.
  | { kind: 'unauthorized'; code: string; message: string }
  // 400 RECEIPT_REJECTED: a relayed receipt did not verify; nothing of the heartbeat was stored.
  | { kind: 'receipt-rejected'; message: string }
  // Any other 4xx: the control plane refuses this heartbeat as it is.
  | { kind: 'refused'; status: number; code: string; message: string }
  // No usable answer: network, timeout, 5xx, an answer that is not the contract's.
  | { kind: 'unavailable'; message: string };

// Classifies an HTTP status and parsed body. The numbers an answer carries are bounded here,
// before the loop uses or stores them: a 409 whose lastSeq is above MAX_ADOPTED_SEQ is a refusal
// (the agent would persist a seq it could barely increment), and a serverTime that is no Date is
// unknown.
export function classifyHeartbeatAnswer(status: number, json: unknown): HeartbeatOutcome {
  if (status === 200) {
    const ok = heartbeatAnswerSchema.safeParse(json);
    if (ok.success) return { kind: 'ok', answer: ok.data };
    return { kind: 'unavailable', message: `200 answer does not match the contract (${formatIssues(ok.error.issues)})` };
  }
  const parsed = errorAnswerSchema.safeParse(json);
  const err = parsed.success ? parsed.data : null;
  const code = err ? err.error.code : 'UNKNOWN';
  const message = err ? err.error.message : `HTTP ${status} without an error body`;
  if (status >= 500 || status < 400) return { kind: 'unavailable', message: `HTTP ${status}: ${message}` };
  if (status === 409 && code === 'SEQ_REPLAYED' && err && err.lastSeq !== undefined) {
    if (err.lastSeq > MAX_ADOPTED_SEQ) {
      return {
        kind: 'refused',
        status,
        code,
        message: `lastSeq=${err.lastSeq} is above ${MAX_ADOPTED_SEQ}, the highest seq this agent adopts: not adopted (a broken or hostile control plane; if it really holds that seq for this node, enroll again with --force) (${message})`,
      };
    }
    return { kind: 'replayed', lastSeq: err.lastSeq, message };
  }
  if (status === 422 && code === 'CLOCK_SKEW') {
    const serverTime = err?.serverTime ?? null;
    if (serverTime !== null && serverTime > MAX_DATE_MS) return { kind: 'clock-skew', serverTime: null, message: `${message} (its serverTime=${serverTime} is no time: ignored)` };
    return { kind: 'clock-skew', serverTime, message };
  }
  if (status === 401) return { kind: 'unauthorized', code, message };
  if (status === 400 && code === 'RECEIPT_REJECTED') return { kind: 'receipt-rejected', message };
  return { kind: 'refused', status, code, message };
}
