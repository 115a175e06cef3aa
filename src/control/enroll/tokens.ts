// Enrollment tokens (docs/design.md §6, §11): single use, expiring, revocable, carrying the labels their
// node gets. Only a token's sha256 is stored, so a copy of the database enrolls nothing.
import { createHash, randomBytes } from 'node:crypto';
import type { Labels } from '../../core/labels.js';
import type { StoreTx } from '../store/store.js';

// sha256 hex of a token.
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

// A token's id: the first 16 hex characters of its hash (names it in `token list` and
// `token revoke` without revealing anything that enrolls).
export function tokenIdOf(token: string): string {
  return hashToken(token).slice(0, 16);
}

// Creates a token valid for `ttlMs` from the store's clock and returns it (shown once).
export async function createToken(tx: StoreTx, ttlMs: number, labels: Labels = {}): Promise<{ token: string; id: string; expiresAt: number; labels: Labels }> {
  const token = 'st_' + randomBytes(24).toString('base64url');
  const createdAt = await tx.now();
  const expiresAt = createdAt + ttlMs;
  const id = tokenIdOf(token);
  await tx.tokens.insert(hashToken(token), { id, createdAt, expiresAt, labels });
  return { token, id, expiresAt, labels };
}
