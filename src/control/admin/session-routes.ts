// The dashboard's sessions (docs/design.md §12), under /ui/: `POST /ui/login` turns an operator token
// into a session cookie (HttpOnly, SameSite=Strict, Path=/ui/, Secure under TLS);
// `GET /ui/session` says whose it is and gives its anti-CSRF token; `POST /ui/logout` ends it;
// `/ui/api/<command>` runs the admin API's operations for the session (a POST carries the
// anti-CSRF token and passes the Origin check). The cookie's path keeps browsers from ever
// sending it to /v1/admin/, which takes bearer tokens only. Any other GET under /ui/ is one of
// the dashboard's files (ui-files.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { recordAudit, type Actor } from '../audit/record-audit.js';
import { ADMIN_PREFIX, methodOf } from '../operations/operation.js';
import { operationAt } from '../operations/operations.js';
import { csrfMatches, csrfTokenOf, findSession, sessionEndsAt, sessionNeedsTouch, SESSION_COOKIE, SESSION_MAX_MS, startSession, touchSession } from '../operators/sessions.js';
import type { OperatorRow, SessionRow } from '../store/store.js';
import { credentialsAllowed, requestFacts, type RequestFacts } from './authenticate.js';
import { SECURITY_HEADERS, sendAdminError, sendAdminJson } from './admin-answers.js';
import { readBody } from '../server/read-body.js';
import { jsonBodyOf, refuseCleartext, runAs, sendWrongMethod, unreadBody, type AdminContext } from './run-operation.js';
import { serveUiFile } from './ui-files.js';

const API_PREFIX = '/ui/api/';
const FORM = 'application/x-www-form-urlencoded';
const MAX_FORM_BYTES = 64 * 1024;

export async function serveSessionRoutes(ctx: AdminContext, req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
  if (path === '/ui/login') return onlyPost(req, res, () => login(ctx, req, res));
  if (path === '/ui/logout') return onlyPost(req, res, () => logout(ctx, req, res));
  if (path === '/ui/session') {
    if (req.method !== 'GET') return wrongMethod(req, res, 'GET');
    return session(ctx, req, res);
  }
  if (path.startsWith(API_PREFIX)) return sessionApi(ctx, req, res, path);
  if ((req.method === 'GET' || req.method === 'HEAD') && serveUiFile(res, path, req.method === 'HEAD')) return;
  return sendAdminError(res, 'NOT_FOUND', `no dashboard page ${JSON.stringify(path.slice(0, 200))}`);
}

async function onlyPost(req: IncomingMessage, res: ServerResponse, fn: () => Promise<void>): Promise<void> {
  if (req.method !== 'POST') return wrongMethod(req, res, 'POST');
  return fn();
}

function wrongMethod(req: IncomingMessage, res: ServerResponse, method: string): void {
  sendWrongMethod(res, (req.url ?? '').split('?')[0] ?? '', method);
}

// The session cookie's attributes: Secure whenever the request came over TLS.
function cookie(value: string, maxAgeSeconds: number, f: RequestFacts): string {
  return `${SESSION_COOKIE}=${value}; Path=/ui/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${f.tls ? '; Secure' : ''}`;
}

function cookieSecret(req: IncomingMessage): string | null {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === SESSION_COOKIE) return v.join('=');
  }
  return null;
}

// A browser's cross-site request carries its own Origin: one that is not this server's is refused.
function originMismatch(req: IncomingMessage, f: RequestFacts): boolean {
  const origin = req.headers.origin;
  return origin !== undefined && origin !== f.origin;
}

// `POST /ui/login` with `{"token": "so_..."}` or the form field `token`.
async function login(ctx: AdminContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const f = requestFacts(req, ctx.trusted);
  if (!credentialsAllowed(f)) return refuseCleartext(res, req, f, 'a login');
  if (originMismatch(req, f)) return sendAdminError(res, 'FORBIDDEN', `a login from another origin (${String(req.headers.origin).slice(0, 200)}) is refused`);
  const form = isForm(req);
  const body = form ? await formOf(req) : await jsonBodyOf(req);
  const token = typeof body.token === 'string' ? body.token : null;
  const operator = await ctx.auth.checkToken(f, token, 'login', '/ui/login');
  if (!operator) return sendAdminError(res, 'UNAUTHENTICATED', 'the operator token is wrong, or its operator was removed or rotated');
  const made = await ctx.store.write(async (tx) => {
    const s = await startSession(tx, operator.name);
    await recordAudit(tx, { operator: operator.name, source: f.address }, 'session.login', operator.name, { expiresAt: s.row.expiresAt });
    return s;
  });
  await ctx.durable();
  const headers = { 'set-cookie': cookie(made.secret, SESSION_MAX_MS / 1000, f) };
  if (form) {
    res.writeHead(303, { ...SECURITY_HEADERS, ...headers, location: '/ui/', 'content-length': '0' });
    return void res.end();
  }
  sendAdminJson(res, 200, { operator: operator.name, role: operator.role, csrfToken: made.csrfToken, ...sessionEndsAt(made.row) }, headers);
}

interface LiveSession {
  secret: string;
  session: SessionRow;
  operator: OperatorRow;
  actor: Actor;
}

// The request's live session (its idle time moved on), or an answer already sent (null).
async function liveSession(ctx: AdminContext, req: IncomingMessage, res: ServerResponse, f: RequestFacts): Promise<LiveSession | null> {
  const secret = cookieSecret(req);
  if (secret === null) return void sendAdminError(res, 'UNAUTHENTICATED', 'no session: log in at POST /ui/login'), null;
  if (!credentialsAllowed(f)) return void refuseCleartext(res, req, f, 'a session cookie'), null;
  const found = await ctx.store.read(async (tx) => {
    const session = await findSession(tx, secret);
    const operator = session ? await tx.operators.get(session.operator) : null;
    return session && operator ? { session, operator, now: await tx.now() } : null;
  });
  // An unknown or expired cookie is not counted as a failure: a browser keeps a stale one, and
  // a session secret (256 random bits) is not worth guessing.
  if (!found) return void sendAdminError(res, 'UNAUTHENTICATED', 'the session is over (logged out, expired, or its operator was removed or rotated): log in again', { 'set-cookie': cookie('', 0, f) }), null;
  const current = sessionNeedsTouch(found.session, found.now) ? await ctx.store.write((tx) => touchSession(tx, found.session)) : found.session;
  return { secret, session: current, operator: found.operator, actor: { operator: found.operator.name, role: found.operator.role, source: f.address } };
}

// A change made with a session must carry the session's anti-CSRF token and, from a browser,
// this server's Origin; a refusal is audited.
async function checkChange(ctx: AdminContext, req: IncomingMessage, res: ServerResponse, f: RequestFacts, s: LiveSession, given: string | undefined, path: string): Promise<boolean> {
  const why = !csrfMatches(s.secret, given) ? 'csrf' : originMismatch(req, f) ? 'origin' : null;
  if (why === null) return true;
  await ctx.store.write((tx) => recordAudit(tx, s.actor, 'denied', path, { reason: why }));
  await ctx.durable();
  sendAdminError(res, 'FORBIDDEN', why === 'csrf' ? 'a change made with a session needs its anti-CSRF token (the X-CSRF-Token header, or the form field csrf; GET /ui/session gives it)' : `a change from another origin (${String(req.headers.origin).slice(0, 200)}) is refused`);
  return false;
}

// `GET /ui/session`: whose session this is, its anti-CSRF token and when it ends.
async function session(ctx: AdminContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const f = requestFacts(req, ctx.trusted);
  const s = await liveSession(ctx, req, res, f);
  if (!s) return;
  sendAdminJson(res, 200, { operator: s.operator.name, role: s.operator.role, csrfToken: csrfTokenOf(s.secret), ...sessionEndsAt(s.session) });
}

// `POST /ui/logout` (anti-CSRF token in the header or the form field `csrf`).
async function logout(ctx: AdminContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const f = requestFacts(req, ctx.trusted);
  const s = await liveSession(ctx, req, res, f);
  if (!s) return;
  const given = headerOf(req, 'x-csrf-token') ?? (isForm(req) ? stringOf((await formOf(req)).csrf) : undefined);
  if (!(await checkChange(ctx, req, res, f, s, given, '/ui/logout'))) return;
  await ctx.store.write(async (tx) => {
    await tx.sessions.remove(s.session.hash);
    await recordAudit(tx, s.actor, 'session.logout', s.operator.name);
  });
  await ctx.durable();
  sendAdminJson(res, 200, { loggedOut: s.operator.name }, { 'set-cookie': cookie('', 0, f) });
}

// `/ui/api/<command>`: the admin API's operation for the session's operator (not the upload).
async function sessionApi(ctx: AdminContext, req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
  const op = operationAt(ADMIN_PREFIX + path.slice(API_PREFIX.length));
  if (!op) return sendAdminError(res, 'NOT_FOUND', `no dashboard route ${JSON.stringify(path.slice(0, 200))}`);
  if (op.upload) return sendAdminError(res, 'BAD_REQUEST', `\`${op.command}\` uploads go through the admin API with a bearer token`);
  const method = methodOf(op);
  if (req.method !== method) return wrongMethod(req, res, method);
  const f = requestFacts(req, ctx.trusted);
  const s = await liveSession(ctx, req, res, f);
  if (!s) return;
  if (method === 'POST' && !(await checkChange(ctx, req, res, f, s, headerOf(req, 'x-csrf-token'), path))) return;
  await runAs(ctx, s.actor, op, req, res, path);
}

function isForm(req: IncomingMessage): boolean {
  return (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() === FORM;
}

async function formOf(req: IncomingMessage): Promise<Record<string, string>> {
  const body = await readBody(req, MAX_FORM_BYTES);
  if (!body.ok) throw unreadBody(body.reason, 'the form', MAX_FORM_BYTES);
  return Object.fromEntries(new URLSearchParams(body.body.toString('utf8')));
}

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

const stringOf = (v: unknown) => (typeof v === 'string' ? v : undefined);
