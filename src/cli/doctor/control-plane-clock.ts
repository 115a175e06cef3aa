// Measures this host's clock against one control plane URL's: one GET of /v1/heartbeat (any
// answer will do, usually 405) and its HTTP Date header, honoring controlPlane.caFile and insecure.
// Its answer's status also tells whether that URL is up.
import { HEARTBEAT_PATH } from '../../core/control-api.js';
import type { ControlPlaneProbe } from '../../core/doctor/observations.js';
import { checkControlPlaneUrl, endpointUrl } from '../../agent/control-plane-url.js';
import { readExtraCa } from '../../platform/extra-ca.js';
import { startRequest } from '../../platform/http-request.js';
import type { TrustScope } from '../../platform/trusted-file.js';

export const CLOCK_PROBE_TIMEOUT_MS = 5_000;

export interface ClockProbeOptions {
  timeoutMs?: number;
  now?: () => number;
  // The trust rule for controlPlane.caFile (doctor runs as root: it reads it as root would).
  caTrust?: TrustScope | undefined;
}

// The skew (server minus local, at the middle of the request) or why there is none. Never throws.
export async function probeControlPlaneClock(settings: { url: string; caFile?: string | undefined; insecure?: boolean | undefined }, opts: ClockProbeOptions = {}): Promise<ControlPlaneProbe> {
  const { timeoutMs = CLOCK_PROBE_TIMEOUT_MS, now = () => Date.now() } = opts;
  let u: URL;
  let ca: string[] | undefined;
  try {
    u = endpointUrl(checkControlPlaneUrl(settings.url, settings.insecure === true), HEARTBEAT_PATH);
    ca = await readExtraCa(settings.caFile, opts.caTrust);
  } catch (err) {
    return { state: 'unreachable', url: settings.url, why: (err as Error).message };
  }
  const url = settings.url;
  return new Promise((resolve) => {
    const sentAt = now();
    let settled = false;
    const done = (v: ControlPlaneProbe) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(v);
    };
    const req = startRequest(u, 'GET', { 'User-Agent': 'agentctl-doctor' }, ca, { timeout: timeoutMs });
    req.on('error', (err: NodeJS.ErrnoException) => done({ state: 'unreachable', url, why: `${err.message}${err.code ? ` (${err.code})` : ''}` }));
    const timer = setTimeout(() => done({ state: 'unreachable', url, why: `no answer within ${timeoutMs} ms` }), timeoutMs);
    req.once('response', (res) => {
      const receivedAt = now();
      res.resume();
      const date = res.headers.date;
      const server = date ? Date.parse(date) : NaN;
      const status = res.statusCode ?? 0;
      if (!Number.isFinite(server)) return done({ state: 'unreachable', url, why: `HTTP ${status} without a valid Date header`, status });
      // The Date header has a resolution of one second: the skew is exact to about ±1 s.
      done({ state: 'measured', url, skewMs: server - Math.round((sentAt + receivedAt) / 2), status });
    });
    req.end();
  });
}
