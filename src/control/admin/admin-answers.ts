// The admin API's answers (docs/design.md §12): JSON, errors as {error: {code, message}} with the same
// codes as the CLI's --json, and an HTTP status that says the same in HTTP's words.
import type { ServerResponse } from 'node:http';
import type { ReasonCode } from '../../core/errors.js';
import { EXIT, exitCodeFor } from '../../cli/error-message.js';

const STATUS: Partial<Record<ReasonCode, number>> = {
  USAGE: 400,
  BAD_REQUEST: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  BUSY: 409,
  RELEASE_EXISTS: 409,
  OPERATOR_EXISTS: 409,
  NOTHING_TO_RETRY: 409,
  TARGET_CONFLICT: 409,
  HOOK_EXISTS: 409,
  HOOK_DELIVERY_FAILED: 502,
  TOKEN_INVALID: 409,
  MANIFEST_EXPIRED: 422,
  SIGNATURE_INVALID: 422,
  INTEGRITY_MISMATCH: 422,
  RELEASE_INVALID: 422,
  DISK_FULL: 507,
};

// The HTTP status of an error with `code`: its own, else 400 for usage, 409 for a refusal, 500.
export function statusOf(code: ReasonCode): number {
  const exit = exitCodeFor(code);
  return STATUS[code] ?? (exit === EXIT.usage ? 400 : exit === EXIT.refused ? 409 : 500);
}

// Headers every admin and dashboard answer carries.
export const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
} as const;

// Writes a JSON answer (and extra headers, a cookie).
export function sendAdminJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string | string[]> = {}): void {
  if (res.headersSent) return void res.destroy();
  const text = JSON.stringify(body);
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

// Writes an error answer with the status its code has (or `status`).
export function sendAdminError(res: ServerResponse, code: ReasonCode, message: string, headers: Record<string, string | string[]> = {}, status = statusOf(code)): void {
  sendAdminJson(res, status, { error: { code, message } }, headers);
}
