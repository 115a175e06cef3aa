// The operator's HTTP surface (docs/design.md §12): the admin API under /v1/admin/ (bearer tokens
// only), and under /ui/ the dashboard's sessions (login, logout, the session and its anti-CSRF
// token), the same operations for a session (/ui/api/...) and the dashboard's files. Every
// route runs one operation of ../operations/operations.ts, so the API, the dashboard and the
// local CLI cannot drift.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StewardError, toStewardError } from '../../core/errors.js';
import type { Clock } from '../../platform/clock.js';
import { logger } from '../../platform/log.js';
import { ADMIN_PREFIX } from '../operations/operation.js';
import { operationAt } from '../operations/operations.js';
import { parseTrustedProxies, type TrustedProxies } from '../operators/request-source.js';
import type { ControlStore } from '../store/store.js';
import { createAuthenticator, credentialsAllowed, requestFacts } from './authenticate.js';
import { sendAdminError, statusOf } from './admin-answers.js';
import { checkMethod, lingerOnUnreadBody, refuseCleartext, runAs, type AdminContext } from './run-operation.js';
import { serveSessionRoutes } from './session-routes.js';
import { checkTrustRoute, isTrustPath, serveTrustRoute } from './trust-routes.js';

const log = logger('control:admin');

const UI_PREFIX = '/ui/';

export interface AdminRouterOptions {
  store: ControlStore;
  // Where kept release tarballs live (catalog/artifact-path.ts); uploads arrive beside them.
  artifactsDir: string;
  // --trusted-proxy: the peers whose X-Forwarded-For and X-Forwarded-Proto are believed.
  trustedProxies?: TrustedProxies;
  // For the waits after failed authentications.
  clock: Pick<Clock, 'sleep'>;
  // What every answer resting on a write waits for; default: the store's durable().
  durable?: () => Promise<void>;
  // serve's --ca-file: what `hook test` trusts for a receiver's https, beside Node's CAs.
  hookCaFile?: string | undefined;
}

export interface AdminRouter {
  // Answers a request under /v1/admin/ or /ui/ and resolves true; false for any other path
  // (nothing is read or written then).
  handle(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
}

export function createAdminRouter(o: AdminRouterOptions): AdminRouter {
  const durable = o.durable ?? (() => o.store.durable());
  const ctx: AdminContext = { store: o.store, artifactsDir: o.artifactsDir, trusted: o.trustedProxies ?? parseTrustedProxies([]), auth: createAuthenticator({ store: o.store, clock: o.clock, durable }), durable, hookCaFile: o.hookCaFile };
  return {
    async handle(req, res) {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const isApi = path.startsWith(ADMIN_PREFIX);
      if (!isApi && path !== '/ui' && !path.startsWith(UI_PREFIX)) return false;
      lingerOnUnreadBody(req, res);
      try {
        if (isApi) await serveApi(ctx, req, res, path);
        else await serveSessionRoutes(ctx, req, res, path);
      } catch (err) {
        sendFailure(res, err, req);
      }
      return true;
    },
  };
}

// `/v1/admin/<command>`: a bearer token, its operator's role, then the operation.
async function serveApi(ctx: AdminContext, req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
  const trust = isTrustPath(path);
  const op = trust ? undefined : operationAt(path);
  if (trust) {
    if (!checkTrustRoute(path, req, res)) return;
  } else {
    if (!op) return sendAdminError(res, 'NOT_FOUND', `no admin route ${JSON.stringify(path.slice(0, 200))} (docs/admin-api.md lists them)`);
    if (!checkMethod(op, req, res)) return;
  }
  const facts = requestFacts(req, ctx.trusted);
  const header = req.headers.authorization;
  if (header === undefined) {
    const why = req.headers.cookie?.includes('steward_session=') ? '; a session cookie is not taken here (the admin API takes bearer tokens only)' : '';
    return sendAdminError(res, 'UNAUTHENTICATED', `no operator token: send \`Authorization: Bearer so_...\`${why}`, { 'www-authenticate': 'Bearer' });
  }
  if (!credentialsAllowed(facts)) return refuseCleartext(res, req, facts, 'an operator token');
  const token = /^Bearer ([^\s]+)$/i.exec(header)?.[1] ?? null;
  const operator = await ctx.auth.checkToken(facts, token, 'bearer', path);
  if (!operator) return sendAdminError(res, 'UNAUTHENTICATED', 'the operator token is wrong, or its operator was removed or rotated', { 'www-authenticate': 'Bearer' });
  const actor = { operator: operator.name, role: operator.role, source: facts.address };
  if (trust) return serveTrustRoute(ctx, actor, req, res, path);
  await runAs(ctx, actor, op as NonNullable<typeof op>, req, res, path);
}

// The answer to anything an operation or a route threw: its code and message, or 500 for a bug
// (logged; the answer names no detail).
function sendFailure(res: ServerResponse, err: unknown, req: IncomingMessage): void {
  const e = err instanceof StewardError ? err : toStewardError(err, 'INTERNAL');
  if (e.code === 'INTERNAL' || statusOf(e.code) >= 500) {
    log('%s %s failed: %s', req.method, req.url, (err as Error)?.stack ?? String(err));
    if (e.code === 'INTERNAL') return sendAdminError(res, 'INTERNAL', 'internal error; see the server log');
  }
  const status = e.details.httpStatus;
  const retryAfter = e.details.retryAfterS;
  sendAdminError(res, e.code, e.message, typeof retryAfter === 'number' ? { 'retry-after': String(retryAfter) } : {}, typeof status === 'number' ? status : undefined);
}
