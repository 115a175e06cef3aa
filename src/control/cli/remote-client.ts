// The remote CLI's side of the admin API (docs/design.md §12): one request per operation, a bearer
// token, answers parsed back into what the local CLI would have: the output, or a StewardError
// with the code the server answered (so the exit code is the same).
import { createReadStream, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isReasonCode, StewardError } from '../../core/errors.js';
import { isLoopbackHost } from '../../core/name-checks.js';
import { readOwnVersion } from '../../platform/own-version.js';
import type { ReleaseBytes } from '../catalog/upload-file.js';
import { methodOf, routeOf, type Operation } from '../operations/operation.js';

// A page of the largest list is well under this (1,000 receipts with their envelopes).
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;
// Without a byte in either direction for this long, the request is given up.
const IDLE_TIMEOUT_MS = 60_000;

export interface RemoteTarget {
  url: URL;
  token: string;
  // Node's CAs plus --ca-file, or undefined for Node's own.
  ca?: string[];
}

// The admin API at `server` (https, or http to a loopback host only), with `token` and --ca-file.
export function remoteTarget(server: string, token: string | undefined, caFile: string | undefined): RemoteTarget {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new StewardError('USAGE', `--server ${JSON.stringify(server)} is not a URL (like https://control.example:8443)`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new StewardError('USAGE', `--server ${JSON.stringify(server)} is not an http(s) URL`);
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname.replace(/^\[|\]$/g, ''))) {
    throw new StewardError('FORBIDDEN', `--server ${url.origin}: plain http is refused except to loopback (the operator token would cross the network in clear text); use https`);
  }
  if (!token) throw new StewardError('UNAUTHENTICATED', 'no operator token: set STEWARD_CONTROL_TOKEN (`steward-control operator add NAME --role R` on the server host prints one)');
  let ca: string[] | undefined;
  if (caFile) {
    try {
      // Why required here: an ESM import of node:tls would load it (and Node's crypto) for every
      // command, --help and the ones run on the database included.
      const tls = createRequire(import.meta.url)('node:tls') as typeof import('node:tls');
      ca = [...tls.rootCertificates, readFileSync(caFile, 'utf8')];
    } catch (err) {
      throw new StewardError('NOT_FOUND', `cannot read --ca-file ${caFile}: ${(err as Error).message}`, { cause: err });
    }
  }
  return { url, token, ...(ca ? { ca } : {}) };
}

// Runs `op` on the server with `input`; `upload` (release add) streams its file after the input.
export async function callRemote(t: RemoteTarget, op: Operation, input: Record<string, unknown>, upload?: ReleaseBytes): Promise<unknown> {
  const method = methodOf(op);
  const query: Record<string, string> = {};
  if (method === 'GET') {
    for (const [k, v] of Object.entries(input)) {
      if (v === undefined) continue;
      if (typeof v !== 'string' && typeof v !== 'number') throw new StewardError('INTERNAL', `${op.command}: ${k} is not text and cannot go in a query`);
      query[k] = String(v);
    }
  }
  const head = method === 'POST' ? Buffer.from(JSON.stringify(input) + (upload ? '\n' : ''), 'utf8') : null;
  return requestAdmin(t, method, routeOf(op), query, head, upload);
}

// One request to an admin route that is not an operation's (the trust routes of docs/design.md
// §21.2): `body` sent as JSON (PUT, POST), the JSON answer back, or a StewardError as callRemote's.
export async function callAdminRoute(t: RemoteTarget, method: 'GET' | 'POST' | 'PUT', route: string, body?: Buffer): Promise<unknown> {
  return requestAdmin(t, method, route, {}, method === 'GET' ? null : (body ?? Buffer.from('{}')));
}

async function requestAdmin(t: RemoteTarget, method: 'GET' | 'POST' | 'PUT', route: string, query: Record<string, string>, head: Buffer | null, upload?: ReleaseBytes): Promise<unknown> {
  // Why imported here: node:http, node:https and node:tls are for a command run through --server;
  // context.ts reads remoteTarget above for every command that runs an operation.
  const { startRequest } = await import('../../platform/http-request.js');
  // A --server URL with a path (behind a proxy) keeps it before the route.
  const u = new URL(t.url);
  u.pathname = t.url.pathname.replace(/\/+$/, '') + route;
  u.search = '';
  for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
  const headers: Record<string, string | number> = { authorization: `Bearer ${t.token}`, accept: 'application/json', 'user-agent': `steward-control/${readOwnVersion()}` };
  if (head) {
    headers['content-type'] = upload ? 'application/vnd.steward.upload' : 'application/json';
    headers['content-length'] = head.length + (upload?.size ?? 0);
  }
  return new Promise((resolve, reject) => {
    let settled = false;
    let answered = false;
    const fail = (message: string, cause?: unknown) => done(new StewardError('CONTROL_PLANE_UNREACHABLE', `${u.origin}${u.pathname}: ${message}`, cause === undefined ? {} : { cause }));
    const done = (err: Error | null, value?: unknown) => {
      if (settled) return;
      settled = true;
      req.destroy();
      if (err) reject(err);
      else resolve(value);
    };
    const req = startRequest(u, method, headers, t.ca);
    // Once the answer has begun, the server may cut off the rest of an upload it refused:
    // the answer decides, not the broken pipe.
    req.on('error', (err) => {
      if (!answered) fail((err as Error).message, err);
    });
    req.setTimeout(IDLE_TIMEOUT_MS, () => fail(`no answer for ${IDLE_TIMEOUT_MS / 1000} s`));
    req.on('response', (res) => {
      answered = true;
      file?.unpipe(req);
      file?.destroy();
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_ANSWER_BYTES) return fail(`the answer is over ${MAX_ANSWER_BYTES} bytes`);
        chunks.push(c);
      });
      res.on('error', (err) => fail(err.message, err));
      res.on('end', () => {
        let body: unknown;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          return fail(`answered ${res.statusCode} without JSON: is this a steward-control admin listener (--admin-listen)?`);
        }
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) return done(null, body);
        const e = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
        const message = typeof e?.message === 'string' ? e.message : `answered ${status}`;
        done(new StewardError(isReasonCode(e?.code) ? e.code : 'CONTROL_PLANE_REFUSED', message));
      });
    });
    let file: ReturnType<typeof createReadStream> | undefined;
    if (!head) return void req.end();
    req.write(head);
    if (!upload) return void req.end();
    file = createReadStream(upload.file);
    file.on('error', (err) => done(new StewardError('NOT_FOUND', `cannot read the release tarball ${upload.file}: ${err.message}`, { cause: err })));
    file.pipe(req);
  });
}
