// What a control plane's answer to one heartbeat means for the agent, pure (DESIGN §6 and
// src/core/control-api.ts). Anything unexpected is `unavailable`, never a crash.
import { errorAnswerSchema, heartbeatAnswerSchema, type HeartbeatAnswer } from '../core/control-api.js';

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

// Classifies an HTTP status and parsed body.
export function classifyHeartbeatAnswer(status: number, json: unknown): HeartbeatOutcome {
  if (status === 200) {
    const ok = heartbeatAnswerSchema.safeParse(json);
    if (ok.success) return { kind: 'ok', answer: ok.data };
    const issue = ok.error.issues[0];
    return { kind: 'unavailable', message: `200 answer does not match the contract (${issue ? `${issue.path.join('.') || '(body)'}: ${issue.message}` : 'invalid'})` };
  }
  const err = errorAnswerSchema.safeParse(json);
  const code = err.success ? err.data.error.code : 'UNKNOWN';
  const message = err.success ? err.data.error.message : `HTTP ${status} without an error body`;
  if (status >= 500 || status < 400) return { kind: 'unavailable', message: `HTTP ${status}: ${message}` };
  if (status === 409 && code === 'SEQ_REPLAYED' && err.success && err.data.lastSeq !== undefined) {
    return { kind: 'replayed', lastSeq: err.data.lastSeq, message };
  }
  if (status === 422 && code === 'CLOCK_SKEW') return { kind: 'clock-skew', serverTime: err.success ? (err.data.serverTime ?? null) : null, message };
  if (status === 401) return { kind: 'unauthorized', code, message };
  if (status === 400 && code === 'RECEIPT_REJECTED') return { kind: 'receipt-rejected', message };
  return { kind: 'refused', status, code, message };
}
