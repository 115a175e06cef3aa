// Requests to steward-control's admin API and dashboard routes in tests: a bearer token, a
// JSON body (or raw bytes), extra headers; the JSON answer parsed.
import http from 'node:http';
import { localActor } from '../../src/control/audit/record-audit.js';
import { integrityOf, releaseKeyOf, signRelease, type SignedRelease } from '../../src/control/catalog/add-release.js';
import { artifactsDirOf } from '../../src/control/catalog/artifact-path.js';
import { runOperation } from '../../src/control/operations/operations.js';
import { operatorAdd } from '../../src/control/operations/operator-ops.js';
import type { SqliteStore } from '../../src/control/store/sqlite/open-sqlite-store.js';
import type { OperatorRole } from '../../src/control/store/store.js';

export interface AdminAnswer {
  status: number;
  body: any;
  headers: http.IncomingHttpHeaders;
}

export interface AdminRequest {
  method?: string;
  token?: string;
  // A JSON body, or raw bytes as they are.
  json?: unknown;
  raw?: Buffer;
  headers?: Record<string, string>;
  // The local address to send from (another loopback address, a host's own address).
  localAddress?: string;
}

// Sends one request to `url` + `p` and parses a JSON answer (null otherwise).
export function adminCall(url: string, p: string, o: AdminRequest = {}): Promise<AdminAnswer> {
  const body = o.raw ?? (o.json === undefined ? undefined : Buffer.from(JSON.stringify(o.json)));
  const headers: Record<string, string> = { ...(o.token ? { authorization: `Bearer ${o.token}` } : {}), ...(o.json !== undefined ? { 'content-type': 'application/json' } : {}), ...(body && !o.headers?.['transfer-encoding'] ? { 'content-length': String(body.length) } : {}), ...o.headers };
  return new Promise((resolve, reject) => {
    const req = http.request(url + p, { method: o.method ?? (body ? 'POST' : 'GET'), headers, agent: false, ...(o.localAddress ? { localAddress: o.localAddress } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const json = (res.headers['content-type'] ?? '').startsWith('application/json') && text ? JSON.parse(text) : null;
        resolve({ status: res.statusCode ?? 0, body: json ?? text, headers: res.headers });
      });
      res.on('error', reject);
    });
    // An early answer may cut off the rest of the body: the answer is what counts.
    req.on('error', reject);
    req.end(body);
  });
}

// Adds an operator through the local operation (as the server host's CLI would) and returns its token.
export async function addOperator(store: SqliteStore, name: string, role: OperatorRole): Promise<string> {
  const r = await runOperation({ store, actor: localActor(), artifactsDir: artifactsDirOf(store.file) }, operatorAdd, { name, role });
  return r.token;
}

// The release `bytes` of app@version signed with `privatePem` at `now` (kept by the server:
// served from `baseUrl`), as the input of `release add` without its bytes.
export function signedRelease(privatePem: string, app: string, version: string, bytes: Buffer, now: number, baseUrl = 'http://127.0.0.1:1'): SignedRelease {
  return signRelease({ app, version, bytes: { size: bytes.length, integrity: integrityOf(bytes) }, url: null, baseUrl, key: releaseKeyOf(privatePem), expiresDays: 30, now, resign: false });
}

// The body of `POST /v1/admin/release/add`: the input as one JSON line, then the bytes.
export function uploadBody(input: Record<string, unknown> | SignedRelease, bytes: Buffer): Buffer {
  return Buffer.concat([Buffer.from(JSON.stringify(input) + '\n'), bytes]);
}
