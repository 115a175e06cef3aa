// The admin API of the fleet's TUF repository (docs/design.md §21.2; docs/admin-api.md, "Trust"):
// routes of their own, not operations, since they take a path parameter and PUT. The same bearer
// token and roles as the rest of /v1/admin/; every change and every denial is audited in the
// transaction that makes it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StewardError } from '../../core/errors.js';
import * as z from '../../core/zod-mini.js';
import { formatIssues } from '../../core/format-issues.js';
import { recordAudit, type Actor } from '../audit/record-audit.js';
import { roleAllows } from '../operators/roles.js';
import { readBody } from '../server/read-body.js';
import type { OperatorRole, PendingRole } from '../store/store.js';
import { addSignatures, makeOnlineKeys, MAX_METADATA_BYTES, onlineKeysJson, putAppTargets, putPending, rotateOnlineKeys } from '../trust/repository.js';
import { trustStatus } from '../trust/trust-status.js';
import { sendAdminError, sendAdminJson } from './admin-answers.js';
import { jsonBodyOf, sendWrongMethod, unreadBody, type AdminContext } from './run-operation.js';

export const TRUST_PREFIX = '/v1/admin/trust';

// Every trust route as docs/admin-api.md lists it: method, path (with its parameter), role.
export const TRUST_ROUTES = [
  { method: 'GET', path: '/v1/admin/trust', role: 'viewer', action: null },
  { method: 'POST', path: '/v1/admin/trust/online-keys', role: 'admin', action: 'trust.online-keys' },
  { method: 'PUT', path: '/v1/admin/trust/pending/{root|targets}', role: 'admin', action: 'trust.pending' },
  { method: 'POST', path: '/v1/admin/trust/pending/{root|targets}/signatures', role: 'admin', action: 'trust.sign' },
  { method: 'PUT', path: '/v1/admin/trust/apps/{app}', role: 'admin', action: 'trust.app' },
] as const satisfies ReadonlyArray<{ method: string; path: string; role: OperatorRole; action: string | null }>;

type Route = (typeof TRUST_ROUTES)[number];

const signaturesSchema = z.strictObject({
  signatures: z
    .array(z.strictObject({ keyid: z.string().check(z.regex(/^[0-9a-f]{64}$/, 'a TUF key id (64 hex)')), sig: z.string().check(z.regex(/^[0-9a-f]{1,1024}$/, 'a hex signature')) }))
    .check(z.minLength(1), z.maxLength(64)),
});

// `{}` for the online keys (made the first time), or `{rotate: [roles], replace?}` for new keys
// of those roles, pending until a root naming them is published (trust rotate --new-online).
const ONLINE_ROLE_NAMES = ['snapshot', 'timestamp', 'director'] as const;
const onlineKeysSchema = z.strictObject({
  rotate: z.optional(
    z
      .array(z.enum(ONLINE_ROLE_NAMES))
      .check(
        z.minLength(1),
        z.maxLength(3),
        z.refine((roles) => new Set(roles).size === roles.length, 'each role once'),
      ),
  ),
  replace: z.optional(z.boolean()),
});

// The route a path names and its parameter, or null.
function match(path: string): { route: Route; param: string | null } | null {
  const [a, b, c, d] = TRUST_ROUTES;
  if (path === TRUST_PREFIX) return { route: a, param: null };
  if (path === `${TRUST_PREFIX}/online-keys`) return { route: b, param: null };
  const pending = /^\/v1\/admin\/trust\/pending\/(root|targets)(\/signatures)?$/.exec(path);
  if (pending) return { route: pending[2] ? d : c, param: pending[1] as string };
  const app = /^\/v1\/admin\/trust\/apps\/([^/]{1,128})$/.exec(path);
  if (app) {
    let name: string;
    try {
      name = decodeURIComponent(app[1] as string);
    } catch {
      // Not percent-encoding: no app has that name (putAppTargets says so).
      name = app[1] as string;
    }
    return { route: TRUST_ROUTES[4], param: name };
  }
  return null;
}

export function isTrustPath(path: string): boolean {
  return path === TRUST_PREFIX || path.startsWith(`${TRUST_PREFIX}/`);
}

// Whether the method is the route's; 405 otherwise. Checked before the token, as operations are.
export function checkTrustRoute(path: string, req: IncomingMessage, res: ServerResponse): boolean {
  const m = match(path);
  if (!m) {
    sendAdminError(res, 'NOT_FOUND', `no admin route ${JSON.stringify(path.slice(0, 200))} (docs/admin-api.md lists them)`);
    return false;
  }
  if (req.method !== m.route.method) {
    sendWrongMethod(res, path, m.route.method);
    return false;
  }
  return true;
}

// Runs a trust route for an authenticated actor.
export async function serveTrustRoute(ctx: AdminContext, actor: Actor, req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
  const { route, param } = match(path) as { route: Route; param: string | null };
  if (!roleAllows(actor.role, route.role)) {
    await ctx.store.write((tx) => recordAudit(tx, actor, 'denied', path, { route: `${route.method} ${route.path}`, role: actor.role, needs: route.role }));
    await ctx.durable();
    return sendAdminError(res, 'FORBIDDEN', `operator ${actor.operator} (${actor.role}) may not ${route.method} ${route.path}: it needs the ${route.role} role`);
  }
  const { store } = ctx;
  let answer: unknown;
  switch (route.path) {
    case '/v1/admin/trust':
      answer = await store.read((tx) => trustStatus(tx));
      break;
    case '/v1/admin/trust/online-keys':
      const parsed = onlineKeysSchema.safeParse(await jsonBodyOf(req));
      if (!parsed.success) throw new StewardError('USAGE', `the body is {} or {rotate: [snapshot|timestamp|director, ...], replace?: boolean}: ${formatIssues(parsed.error.issues)}`);
      const { rotate, replace } = parsed.data;
      answer = await audited(ctx, actor, path, route.action, async (tx) => {
        if (!rotate) {
          const keys = onlineKeysJson(await makeOnlineKeys(tx));
          return { answer: { onlineKeys: keys, pending: [] }, details: { snapshot: keys.snapshot.keyid, timestamp: keys.timestamp.keyid, director: keys.director.keyid } };
        }
        const r = await rotateOnlineKeys(tx, rotate, replace === true);
        const keys = onlineKeysJson(r.keys);
        return {
          answer: { onlineKeys: keys, pending: r.rotated },
          details: { snapshot: keys.snapshot.keyid, timestamp: keys.timestamp.keyid, director: keys.director.keyid, pending: r.rotated, made: r.made, dropped: r.dropped },
        };
      });
      break;
    case '/v1/admin/trust/pending/{root|targets}': {
      const text = await metadataBody(req);
      answer = await audited(ctx, actor, path, route.action, async (tx) => {
        const r = await putPending(tx, param as PendingRole, text, actor.operator);
        return { answer: r, details: { role: r.role, version: r.version, published: r.published } };
      });
      break;
    }
    case '/v1/admin/trust/pending/{root|targets}/signatures': {
      const parsed = signaturesSchema.safeParse(await jsonBodyOf(req));
      if (!parsed.success) throw new StewardError('USAGE', `the body is {signatures: [{keyid, sig}]}: ${formatIssues(parsed.error.issues)}`);
      answer = await audited(ctx, actor, path, route.action, async (tx) => {
        const r = await addSignatures(tx, param as PendingRole, parsed.data.signatures, actor.operator);
        return { answer: r, details: { role: r.role, version: r.version, keyids: parsed.data.signatures.map((s) => s.keyid), published: r.published } };
      });
      break;
    }
    case '/v1/admin/trust/apps/{app}': {
      const text = await metadataBody(req);
      answer = await audited(ctx, actor, path, route.action, async (tx) => {
        const r = await putAppTargets(tx, param as string, text);
        return { answer: { ...r, published: true }, details: { app: r.app, version: r.version } };
      });
      break;
    }
  }
  sendAdminJson(res, 200, answer);
}

// Runs a change and its audit entry in one transaction; a refusal is audited too (its code), in a
// transaction of its own, since the change's rolled back.
async function audited<T>(ctx: AdminContext, actor: Actor, path: string, action: string | null, fn: (tx: Parameters<Parameters<AdminContext['store']['write']>[0]>[0]) => Promise<{ answer: T; details: Record<string, unknown> }>): Promise<T> {
  try {
    const r = await ctx.store.write(async (tx) => {
      const out = await fn(tx);
      await recordAudit(tx, actor, action as string, path, out.details);
      return out.answer;
    });
    await ctx.durable();
    return r;
  } catch (err) {
    if (err instanceof StewardError && err.code !== 'INTERNAL' && err.code !== 'BUSY') {
      await ctx.store.write((tx) => recordAudit(tx, actor, `${action}.refused`, path, { code: err.code, message: err.message.slice(0, 500) }));
      await ctx.durable();
    }
    throw err;
  }
}

async function metadataBody(req: IncomingMessage): Promise<string> {
  const body = await readBody(req, MAX_METADATA_BYTES);
  if (!body.ok) throw unreadBody(body.reason, 'the metadata', MAX_METADATA_BYTES);
  return body.body.toString('utf8');
}
