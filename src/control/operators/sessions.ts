// Dashboard sessions (docs/design.md §12): an operator token turned into a cookie, kept in the store
// by the sha256 of its secret, 12 h idle and 7 days absolute. The anti-CSRF token is derived
// from the session's secret, so it is bound to that session and needs no storage of its own.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { SessionRow, StoreReader, StoreTx } from '../store/store.js';
import { hashSecret } from './operator-tokens.js';

export const SESSION_IDLE_MS = 12 * 3_600_000;
export const SESSION_MAX_MS = 7 * 86_400_000;
export const SESSION_COOKIE = 'steward_session';
// A use of a session moves its idle time only when the last recorded use is older than this:
// a dashboard that refreshes every few seconds does not write on every request.
const TOUCH_EVERY_MS = 60_000;

const SESSION_SECRET_RE = /^ss_[A-Za-z0-9_-]{43}$/;

export interface NewSession {
  // The cookie's value: shown to the browser once, never stored.
  secret: string;
  csrfToken: string;
  row: SessionRow;
}

// The anti-CSRF token of the session whose secret is `secret`.
export function csrfTokenOf(secret: string): string {
  return createHmac('sha256', secret).update('steward-csrf-v1').digest('base64url');
}

// Whether `given` is the anti-CSRF token of the session `secret`, compared in constant time.
export function csrfMatches(secret: string, given: string | undefined): boolean {
  if (!given) return false;
  const want = Buffer.from(csrfTokenOf(secret));
  const got = Buffer.from(given);
  return got.length === want.length && timingSafeEqual(got, want);
}

// Starts a session for `operator` at the store's time (expired sessions are forgotten on the way).
export async function startSession(tx: StoreTx, operator: string): Promise<NewSession> {
  const now = await tx.now();
  await tx.sessions.removeExpired(now, SESSION_IDLE_MS);
  const secret = 'ss_' + randomBytes(32).toString('base64url');
  const row: SessionRow = { hash: hashSecret(secret), operator, createdAt: now, lastSeenAt: now, expiresAt: now + SESSION_MAX_MS };
  await tx.sessions.insert(row);
  return { secret, csrfToken: csrfTokenOf(secret), row };
}

// The live session of a cookie secret at the store's time, or null (unknown, idle too long, or
// past its absolute end).
export async function findSession(tx: StoreReader, secret: string): Promise<SessionRow | null> {
  if (!SESSION_SECRET_RE.test(secret)) return null;
  const s = await tx.sessions.get(hashSecret(secret));
  const now = await tx.now();
  if (!s || s.expiresAt <= now || s.lastSeenAt + SESSION_IDLE_MS <= now) return null;
  return s;
}

// Whether a use of the session at `now` should be recorded (see TOUCH_EVERY_MS).
export function sessionNeedsTouch(s: SessionRow, now: number): boolean {
  return now - s.lastSeenAt >= TOUCH_EVERY_MS;
}

// Records a use of a live session and returns it as it is now.
export async function touchSession(tx: StoreTx, s: SessionRow): Promise<SessionRow> {
  const now = await tx.now();
  await tx.sessions.touch(s.hash, now);
  return { ...s, lastSeenAt: Math.max(now, s.lastSeenAt) };
}

// When a session ends if it is not used again.
export function sessionEndsAt(s: SessionRow): { expiresAt: number; idleExpiresAt: number } {
  return { expiresAt: s.expiresAt, idleExpiresAt: Math.min(s.expiresAt, s.lastSeenAt + SESSION_IDLE_MS) };
}
