import type { ControlErrorCode } from '../../core/control-api.js';

// One HTTP answer: a status and a JSON body.
export interface Answer {
  status: number;
  body: unknown;
  // Not sent: the fleet's TUF versions and the store's time, read in the heartbeat's own commit,
  // from which trust/heartbeat-trust.ts answers an agent that asks without another read.
  trust?: TrustState;
}

export interface TrustState {
  rootVersion: number | null;
  timestampVersion: number | null;
  now: number;
}

// The error body of the contract: {error: {code, message}} plus lastSeq or serverTime.
export function errorAnswer(status: number, code: ControlErrorCode, message: string, extra: { lastSeq?: number; serverTime?: number } = {}): Answer {
  return { status, body: { error: { code, message }, ...extra } };
}
