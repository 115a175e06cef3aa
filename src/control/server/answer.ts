import type { ControlErrorCode } from '../../core/control-api.js';

// One HTTP answer: a status and a JSON body.
export interface Answer {
  status: number;
  body: unknown;
}

// The error body of the contract: {error: {code, message}} plus lastSeq or serverTime.
export function errorAnswer(status: number, code: ControlErrorCode, message: string, extra: { lastSeq?: number; serverTime?: number } = {}): Answer {
  return { status, body: { error: { code, message }, ...extra } };
}
