import { createHash, randomBytes } from 'node:crypto';
import type { ControlStore } from './open-store.js';

// sha256 hex of a token: only this is stored, so a copy of the database enrolls nothing.
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

// Creates a single-use enrollment token valid for `ttlMs` and returns it (shown once).
export function createToken(store: ControlStore, now: number, ttlMs: number): { token: string; expiresAt: number } {
  const token = 'st_' + randomBytes(24).toString('base64url');
  const expiresAt = now + ttlMs;
  store.prepare('INSERT INTO tokens (hash, createdAt, expiresAt) VALUES (?, ?, ?)').run(hashToken(token), now, expiresAt);
  return { token, expiresAt };
}

// Marks a token used by `nodeId` when it exists, is unused and has not expired; false otherwise.
// Call inside the transaction that creates the node, so both happen or neither.
export function consumeToken(store: ControlStore, token: string, now: number, nodeId: string): boolean {
  const r = store
    .prepare('UPDATE tokens SET usedAt = ?, usedBy = ? WHERE hash = ? AND usedAt IS NULL AND expiresAt > ?')
    .run(now, nodeId, hashToken(token), now);
  return r.changes === 1;
}
