// The dashboard's calls (docs/design.md §12): the session routes under /ui/ and the admin API's
// operations for the session under /ui/api/<command words>; the browser sends the session
// cookie itself (HttpOnly: no script here can read it). A change is a POST carrying the
// session's anti-CSRF token in X-CSRF-Token.
import type { Session } from './api-types.js';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

async function answerOf<T>(res: Response): Promise<T> {
  const body: unknown = await res.json().catch(() => null);
  if (res.ok) return body as T;
  const e = (body as { error?: { code?: string; message?: string } } | null)?.error;
  throw new ApiError(res.status, e?.code ?? 'INTERNAL', e?.message ?? `HTTP ${res.status}`);
}

function routeOf(command: string): string {
  return '/ui/api/' + command.split(' ').map(encodeURIComponent).join('/');
}

// Runs a read (`nodes`, `rollout status`) with its flags as the query.
export async function read<T>(command: string, query: Record<string, string | undefined> = {}): Promise<T> {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') q.set(k, v);
  const qs = q.toString();
  return answerOf<T>(await fetch(routeOf(command) + (qs ? `?${qs}` : ''), { credentials: 'same-origin', headers: { accept: 'application/json' } }));
}

// Runs a change (`rollout pause`) with its flags as the JSON body.
export async function change<T>(session: Session, command: string, body: Record<string, unknown>): Promise<T> {
  return answerOf<T>(
    await fetch(routeOf(command), {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'x-csrf-token': session.csrfToken },
      body: JSON.stringify(body),
    }),
  );
}

// Every page of a paged read, up to `maxPages`; `more` says whether pages were left.
export async function readAll<T>(command: string, key: string, query: Record<string, string | undefined> = {}, maxPages = 20): Promise<{ items: T[]; more: boolean }> {
  const items: T[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < maxPages; i++) {
    const page = await read<Record<string, unknown>>(command, { ...query, cursor });
    items.push(...((page[key] as T[] | undefined) ?? []));
    const next = page.nextCursor;
    if (typeof next !== 'string') return { items, more: false };
    cursor = next;
  }
  return { items, more: true };
}

// The session the cookie holds, or null when there is none (or it ended).
export async function currentSession(): Promise<Session | null> {
  const res = await fetch('/ui/session', { credentials: 'same-origin' });
  if (res.status === 401) return null;
  return answerOf<Session>(res);
}

export async function login(token: string): Promise<Session> {
  return answerOf<Session>(await fetch('/ui/login', { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) }));
}

export async function logout(session: Session): Promise<void> {
  await answerOf<unknown>(await fetch('/ui/logout', { method: 'POST', credentials: 'same-origin', headers: { 'x-csrf-token': session.csrfToken } }));
}
