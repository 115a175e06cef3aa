import { lookup } from 'node:dns/promises';
import http from 'node:http';
import net from 'node:net';
import { isLoopbackHost } from '../../core/name-checks.js';

// One probe attempt: ok, or what happened ("answered 500", "refused", ...).
export type CheckResult = { ok: true } | { ok: false; detail: string; timedOut?: boolean };

const BODY_CAP = 64 * 1024;

function isLoopbackIp(ip: string): boolean {
  return ip === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(ip) || /^::ffff:127\./.test(ip);
}

// The loopback address to connect to for `host`, or null when it is not loopback. `localhost`
// is resolved and every address it gives must be loopback: a probe never leaves the host.
export async function resolveLoopback(host: string): Promise<string | null> {
  const h = host.replace(/^\[|\]$/g, '');
  if (!isLoopbackHost(h)) return null;
  if (net.isIP(h)) return isLoopbackIp(h) ? h : null;
  const addrs = await lookup(h, { all: true }).catch(() => []);
  if (addrs.length === 0 || !addrs.every((a) => isLoopbackIp(a.address))) return null;
  return (addrs[0] as { address: string }).address;
}

// Parses an http probe URL, or null when it is not plain http to a loopback host.
export function parseProbeUrl(raw: string): URL | null {
  try {
    const u = new URL(raw);
    if (u.protocol !== 'http:' || u.username !== '' || u.password !== '' || !isLoopbackHost(u.hostname.replace(/^\[|\]$/g, ''))) return null;
    return u;
  } catch {
    return null;
  }
}

// Parses a tcp probe target "host:port", or null when it is not a loopback host and a port.
export function parseProbeTcp(raw: string): { host: string; port: number } | null {
  const m = /^(.+):(\d{1,5})$/.exec(raw);
  if (!m) return null;
  const host = (m[1] as string).replace(/^\[|\]$/g, '');
  const port = Number(m[2]);
  if (!isLoopbackHost(host) || port < 1 || port > 65535) return null;
  return { host, port };
}

function describe(err: NodeJS.ErrnoException): string {
  if (err.code === 'ECONNREFUSED') return 'refused';
  if (err.code === 'ECONNRESET') return 'reset the connection';
  return `failed: ${err.code ?? err.message}`;
}

// GET `url` once: 2xx passes; 3xx fails (redirects are never followed); the body is drained
// up to 64 KiB and the connection closed. `timeoutMs` bounds the whole exchange.
export async function checkHttp(url: string, timeoutMs: number, signal?: AbortSignal): Promise<CheckResult> {
  const u = parseProbeUrl(url);
  const ip = u && (await resolveLoopback(u.hostname));
  if (!u || !ip) return { ok: false, detail: `GET ${url} refused: not a loopback http URL` };
  const what = `GET ${url}`;
  return settleOnce(what, timeoutMs, signal, (finish) => {
    const req = http.request({
      host: ip,
      port: u.port === '' ? 80 : Number(u.port),
      path: `${u.pathname}${u.search}`,
      method: 'GET',
      headers: { host: u.host, connection: 'close' },
      agent: false,
    });
    req.on('socket', (s) => s.on('connect', () => {
      if (s.remoteAddress && !isLoopbackIp(s.remoteAddress)) finish({ ok: false, detail: `${what} reached a non-loopback address` });
    }));
    req.on('error', (err) => finish({ ok: false, detail: `${what} ${describe(err)}` }));
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      const result: CheckResult =
        status >= 200 && status < 300
          ? { ok: true }
          : { ok: false, detail: `${what} answered ${status}${status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}` };
      let seen = 0;
      res.on('data', (chunk: Buffer) => {
        seen += chunk.length;
        if (seen > BODY_CAP) finish(result);
      });
      res.on('end', () => finish(result));
      res.on('error', () => finish(result));
    });
    req.end();
    return req;
  });
}

// Connects once to a loopback `host:port`; success closes the connection at once.
export async function checkTcp(target: string, timeoutMs: number, signal?: AbortSignal): Promise<CheckResult> {
  const t = parseProbeTcp(target);
  const ip = t && (await resolveLoopback(t.host));
  const what = `connect ${target}`;
  if (!t || !ip) return { ok: false, detail: `${what} refused: not a loopback host:port` };
  return settleOnce(what, timeoutMs, signal, (finish) => {
    const sock = net.connect({ host: ip, port: t.port });
    sock.on('connect', () => finish({ ok: true }));
    sock.on('error', (err) => finish({ ok: false, detail: `${what} ${describe(err)}` }));
    return sock;
  });
}

// Runs one check that settles once: on its own answer, after `timeoutMs`, or when `signal`
// aborts; then its request or socket is destroyed.
function settleOnce(
  what: string,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  open: (finish: (r: CheckResult) => void) => { destroy(): void },
): Promise<CheckResult> {
  return new Promise<CheckResult>((resolve) => {
    let done = false;
    let handle: { destroy(): void } | null = null;
    const finish = (r: CheckResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      handle?.destroy();
      resolve(r);
    };
    // A real timer on purpose: this bounds socket I/O, which no injected clock can speed up.
    const timer = setTimeout(() => finish({ ok: false, detail: `${what} timed out after ${Math.round(timeoutMs)} ms`, timedOut: true }), timeoutMs);
    const onAbort = () => finish({ ok: false, detail: `${what} was cancelled` });
    signal?.addEventListener('abort', onAbort, { once: true });
    handle = open(finish);
    if (done) handle.destroy();
  });
}
