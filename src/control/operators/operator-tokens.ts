// Operators' API tokens (docs/design.md §12): `so_` + 32 base64url characters (24 random bytes), shown
// once; only their sha256 is stored, so a copy of the database authenticates nobody.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { OperatorRow } from '../store/store.js';

export const OPERATOR_TOKEN_RE = /^so_[A-Za-z0-9_-]{32}$/;

// sha256 hex of a secret (an operator token, a session secret).
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

// A fresh operator token.
export function mintOperatorToken(): string {
  return 'so_' + randomBytes(24).toString('base64url');
}

// The operator whose token `token` is, or null. The token's hash is compared with every
// operator's in constant time, and every comparison is made whatever the first ones gave, so
// the time taken says nothing about any stored hash.
export function findOperatorByToken(operators: readonly OperatorRow[], token: string): OperatorRow | null {
  if (!OPERATOR_TOKEN_RE.test(token)) return null;
  const hash = Buffer.from(hashSecret(token), 'hex');
  let found: OperatorRow | null = null;
  for (const o of operators) {
    const stored = Buffer.from(o.tokenHash, 'hex');
    if (stored.length === hash.length && timingSafeEqual(stored, hash) && !found) found = o;
  }
  return found;
}
