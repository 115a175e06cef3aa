// Running an operation for an authenticated actor over HTTP (docs/design.md §12), shared by the admin
// API (bearer tokens) and the dashboard's session API: the role check (a denial is audited),
// the input (a GET's query, a POST's JSON body, an upload's head and bytes), the answer.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StewardError } from '../../core/errors.js';
import { MAX_BODY_BYTES } from '../../core/control-paths.js';
import { logger } from '../../platform/log.js';
import { recordAudit, type Actor } from '../audit/record-audit.js';
import { discardReleaseBytes, receiveUpload, type ReleaseBytes } from '../catalog/upload-file.js';
import { methodOf, parseInput, routeOf, type Operation } from '../operations/operation.js';
import type { TrustedProxies } from '../operators/request-source.js';
import { roleAllows } from '../operators/roles.js';
import { readBody } from '../server/read-body.js';
import type { ControlStore } from '../store/store.js';
import type { Authenticator, RequestFacts } from './authenticate.js';
import { sendAdminError, sendAdminJson } from './admin-answers.js';
import { MAX_UPLOAD_HEAD_BYTES, splitUpload } from './read-upload.js';

const log = logger('control:admin');

// What the routes share.
export interface AdminContext {
  store: ControlStore;
  artifactsDir: string;
  trusted: TrustedProxies;
  auth: Authenticator;
  durable: () => Promise<void>;
  hookCaFile?: string | undefined;
}

// Runs an operation for an authenticated actor: its role, its input (the query of a GET, the
// JSON body of a POST, an upload's head and bytes), then its output as the answer.
export async function runAs(ctx: AdminContext, actor: Actor, op: Operation, req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
  if (!roleAllows(actor.role, op.role)) {
    await ctx.store.write((tx) => recordAudit(tx, actor, 'denied', path, { command: op.command, role: actor.role, needs: op.role }));
    await ctx.durable();
    return sendAdminError(res, 'FORBIDDEN', `operator ${actor.operator} (${actor.role}) may not run \`${op.command}\`: it needs the ${op.role} role`);
  }
  const opCtx = { store: ctx.store, actor, artifactsDir: ctx.artifactsDir, hookCaFile: ctx.hookCaFile };
  let upload: ReleaseBytes | undefined;
  try {
    let input: unknown;
    if (op.upload) {
      const split = await splitUpload(req);
      if (!split.ok) throw new StewardError('BAD_REQUEST', `${op.command}: the body is one line of JSON (at most ${MAX_UPLOAD_HEAD_BYTES} bytes), a newline, then the tarball (${split.reason})`, split.reason === 'head-too-large' ? TOO_LARGE : {});
      input = parseInput(op, parseJsonObject(split.head.toString('utf8')));
      upload = await receiveUpload(ctx.artifactsDir, split.bytes);
    } else {
      input = parseInput(op, methodOf(op) === 'GET' ? queryOf(req) : await jsonBodyOf(req));
    }
    const output = await op.run(opCtx, input, upload);
    if (methodOf(op) === 'POST') await ctx.durable();
    sendAdminJson(res, 200, output);
  } finally {
    if (upload) await discardReleaseBytes(upload);
  }
}

// Whether the request's method is the operation's; a 405 is answered when not.
export function checkMethod(op: Operation, req: IncomingMessage, res: ServerResponse): boolean {
  const method = methodOf(op);
  if (req.method === method) return true;
  sendWrongMethod(res, routeOf(op), method);
  return false;
}

// 405, naming the method `path` takes.
export function sendWrongMethod(res: ServerResponse, path: string, method: string): void {
  sendAdminJson(res, 405, { error: { code: 'BAD_REQUEST', message: `${path} takes ${method}` } }, { allow: method });
}

// A request answered before its body was read (a refusal, an error): Node reads and drops the
// rest after the answer, so the client reads the answer instead of a reset connection; a body
// still coming 2 s later is cut off (an unauthenticated upload is not read to its end).
export function lingerOnUnreadBody(req: IncomingMessage, res: ServerResponse): void {
  res.once('finish', () => {
    if (!req.complete) setTimeout(() => req.socket.destroy(), 2000).unref();
  });
}

// 403 for a credential sent in clear text to a peer that is not loopback: it is not even
// checked (whoever listened on the way has it now), and the answer says to rotate it.
export function refuseCleartext(res: ServerResponse, req: IncomingMessage, facts: RequestFacts, what: string): void {
  log('refused %s over plain http from %s', what, facts.address);
  sendAdminError(res, 'FORBIDDEN', `${what} is refused over plain http from ${facts.address} (only loopback may use http): serve --admin-listen with --tls-cert/--tls-key, and rotate that credential, it crossed the network in clear text`);
}

// The query of a GET as an object of strings; a key given twice is a USAGE error.
function queryOf(req: IncomingMessage): Record<string, string> {
  const params = new URL(req.url ?? '/', 'http://admin.invalid').searchParams;
  const out: Record<string, string> = {};
  for (const [k, v] of params) {
    if (Object.hasOwn(out, k)) throw new StewardError('BAD_REQUEST', `query parameter ${JSON.stringify(k)} is given twice`);
    out[k] = v;
  }
  return out;
}

// A body over its limit is answered 413 (its code BAD_REQUEST all the same).
export const TOO_LARGE = { details: { httpStatus: 413 } };

// The error for a body (`what`: the body, the form) that readBody could not take.
export function unreadBody(reason: 'too-large' | 'aborted', what: string, limit: number): StewardError {
  return reason === 'too-large' ? new StewardError('BAD_REQUEST', `${what} is over the limit of ${limit} bytes`, TOO_LARGE) : new StewardError('BAD_REQUEST', `${what} was cut short`);
}

// The JSON object of a POST's body ({} when empty), at most MAX_BODY_BYTES; anything else is
// BAD_REQUEST (no CLI sends it: the CLI's own mistakes are USAGE, from the operation's schema).
export async function jsonBodyOf(req: IncomingMessage): Promise<Record<string, unknown>> {
  const body = await readBody(req, MAX_BODY_BYTES);
  if (!body.ok) throw unreadBody(body.reason, 'the body', MAX_BODY_BYTES);
  return body.body.length === 0 ? {} : parseJsonObject(body.body.toString('utf8'));
}

function parseJsonObject(text: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new StewardError('BAD_REQUEST', 'the body is not JSON');
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new StewardError('BAD_REQUEST', 'the body is not a JSON object');
  return v as Record<string, unknown>;
}

