// One HTTP(S) request the way every steward client makes it: the release fetch, the agent's
// control-plane client and doctor's clock probe.
import type { ClientRequest, OutgoingHttpHeaders } from 'node:http';
import type { RequestOptions } from 'node:https';
import { createRequire } from 'node:module';
import type { LookupFunction } from 'node:net';
import type { ConnectionOptions, SecureContext } from 'node:tls';

// Why require and not import: from Node 22 on, node:http has lazy exports (WebSocket and the
// like) that load undici when read, and an ESM import of a builtin reads every export to build
// its namespace. That was 15 ms of a 125 ms steward-control run on Node 24 (a CPU profile),
// though no client here speaks WebSocket; require hands back the module without reading them.
const load = createRequire(import.meta.url);
const http = load('node:http') as typeof import('node:http');
// Why required at the first https request: node:https and node:tls bring node:crypto and the TLS
// code with them (~8 ms of a steward-control run on Node 20), which a request over plain http to
// a loopback address (`steward-control --server http://127.0.0.1:PORT`, the tests) never uses.
// require caches a module: the later calls cost a lookup.
const https = () => load('node:https') as typeof import('node:https');
const tls = () => load('node:tls') as typeof import('node:tls');

// The modules themselves, for a client that keeps its connections in an Agent of its own.
export const httpModule = () => http;
export const httpsModule = https;

// The TLS context of each CA list a client holds (readExtraCa's: Node's roots plus a CA file),
// made once: a `ca` option makes Node parse every certificate of the list again for each
// connection, 29 ms of CPU for Node's 144 roots here, at every heartbeat of every agent with a
// controlPlane.caFile. The context verifies against the same list; a list is never changed
// after it is made, and the context goes with it.
const contexts = new WeakMap<readonly string[], SecureContext>();

function contextOf(ca: readonly string[]): SecureContext {
  let c = contexts.get(ca);
  if (!c) {
    c = tls().createSecureContext({ ca: [...ca] });
    contexts.set(ca, c);
  }
  return c;
}

// `localhost` is pinned to 127.0.0.1: a loopback name must never reach DNS, which could point it elsewhere.
export const pinLoopback = ((_host: string, options: { all?: boolean }, cb: (...args: unknown[]) => void) => {
  if (options?.all) cb(null, [{ address: '127.0.0.1', family: 4 }]);
  else cb(null, '127.0.0.1', 4);
}) as unknown as LookupFunction;

// Starts one request to `u` the way every steward client does: no connection reuse (unless
// `extra.agent` keeps them), `localhost`
// pinned to 127.0.0.1, https verified against Node's CAs plus `ca`. The caller attaches its
// 'error' listener at once.
export function startRequest(u: URL, method: string, headers: OutgoingHttpHeaders, ca: string[] | undefined, extra: RequestOptions & Pick<ConnectionOptions, 'session'> = {}): ClientRequest {
  const hostname = u.hostname.replace(/^\[|\]$/g, '');
  const options: RequestOptions & Pick<ConnectionOptions, 'session' | 'secureContext'> = {
    protocol: u.protocol,
    hostname,
    port: u.port === '' ? undefined : Number(u.port),
    path: `${u.pathname}${u.search}`,
    method,
    headers,
    agent: false,
    ...extra,
  };
  if (hostname === 'localhost') options.lookup = pinLoopback;
  if (u.protocol === 'https:') {
    options.rejectUnauthorized = true;
    if (ca) options.secureContext = contextOf(ca);
  }
  return (u.protocol === 'https:' ? https() : http).request(options);
}
