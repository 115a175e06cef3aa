// Which control-plane URLs the agent and `agentctl enroll` may talk to (docs/design.md §2, §6).
import { StewardError } from '../core/errors.js';
import { isLoopbackHost } from '../core/name-checks.js';

export interface ControlPlaneSettings {
  // One URL, or the list tried in order (docs/design.md §13).
  url: string | readonly string[];
  caFile?: string | undefined;
  insecure?: boolean | undefined;
}

// Parses the control-plane URL and refuses, before any connection: credentials in it, schemes
// other than http(s), and plain http to a host that is not loopback unless `insecure` says so
// (the same loopback rule as release downloads). Throws CONFIG_INVALID naming the URL.
export function checkControlPlaneUrl(raw: string, insecure = false): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch (err) {
    throw new StewardError('CONFIG_INVALID', `the control plane URL ${JSON.stringify(raw)} is not a valid URL`, { cause: err });
  }
  if (u.username !== '' || u.password !== '') throw new StewardError('CONFIG_INVALID', `credentials in the control plane URL are refused (${u.protocol}//${u.host})`);
  if (u.search !== '' || u.hash !== '') throw new StewardError('CONFIG_INVALID', `the control plane URL ${u.origin}${u.pathname} may not carry a query or fragment`);
  if (u.protocol === 'https:') return u;
  if (u.protocol === 'http:') {
    if (isLoopbackHost(u.hostname) || insecure) return u;
    throw new StewardError(
      'CONFIG_INVALID',
      `plain http to the control plane is allowed only to a loopback host, not ${u.host}; use https (or set controlPlane.insecure: true in the host config)`,
    );
  }
  throw new StewardError('CONFIG_INVALID', `the control plane URL scheme ${u.protocol} is not allowed; use https`);
}

// Whether a checked URL is plain http to a non-loopback host: allowed only by `insecure`,
// and then worth a warning at every start.
export function isInsecureUrl(u: URL): boolean {
  return u.protocol === 'http:' && !isLoopbackHost(u.hostname);
}

// The URL of `endpoint` (e.g. /v1/heartbeat) under the control plane's base URL, keeping a
// base path (https://cp.example/steward/ + /v1/heartbeat -> /steward/v1/heartbeat).
export function endpointUrl(base: URL, endpoint: string): URL {
  const u = new URL(base.href);
  // An endpoint may carry a query (`/v1/wait?timeout=30`): it goes to the search, not the path.
  const q = endpoint.indexOf('?');
  u.pathname = base.pathname.replace(/\/+$/, '') + (q < 0 ? endpoint : endpoint.slice(0, q));
  if (q >= 0) u.search = endpoint.slice(q);
  return u;
}
