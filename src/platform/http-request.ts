// One HTTP(S) request the way every steward client makes it: the release fetch, the agent's
// control-plane client and doctor's clock probe.
import http, { type ClientRequest } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';

// `localhost` is pinned to 127.0.0.1: a loopback name must never reach DNS, which could point it elsewhere.
export const pinLoopback = ((_host: string, options: { all?: boolean }, cb: (...args: unknown[]) => void) => {
  if (options?.all) cb(null, [{ address: '127.0.0.1', family: 4 }]);
  else cb(null, '127.0.0.1', 4);
}) as unknown as LookupFunction;

// Starts one request to `u` the way every steward client does: no connection reuse, `localhost`
// pinned to 127.0.0.1, https verified against Node's CAs plus `ca`. The caller attaches its
// 'error' listener at once.
export function startRequest(u: URL, method: string, headers: http.OutgoingHttpHeaders, ca: string[] | undefined, extra: https.RequestOptions = {}): ClientRequest {
  const hostname = u.hostname.replace(/^\[|\]$/g, '');
  const options: https.RequestOptions = {
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
    if (ca) options.ca = ca;
  }
  return (u.protocol === 'https:' ? https : http).request(options);
}
