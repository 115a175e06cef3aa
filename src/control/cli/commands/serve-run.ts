// What `steward-control serve` runs (serve.ts registers the command): imported when serve runs, so
// that --help and the other commands load none of the server's code.
import { X509Certificate } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import type { Command } from 'commander';
import { StewardError } from '../../../core/errors.js';
import { systemClock } from '../../../platform/clock.js';
import { enableDefaultLogs, logger } from '../../../platform/log.js';
import { startAdminServer, type AdminServer } from '../../admin/admin-server.js';
import { createAdminRouter } from '../../admin/router.js';
import { parseTrustedProxies, type TrustedProxies } from '../../operators/request-source.js';
import type { ServeMetrics } from '../../metrics/serve-metrics.js';
import { startControlServer, type ControlServer } from '../../server/control-server.js';
import { checkServeTls, type ServeTls } from '../../server/serve-tls.js';
import { stopPointsFromEnv } from '../../server/test-stop-points.js';
import { openStore } from '../../store/open-store.js';
import { startHookDeliverer, type HookDeliverer } from '../../hooks/deliver-hooks.js';
import { readExtraCa } from '../../../platform/extra-ca.js';
import { artifactsDirFor, dbSpecOf, jsonOf } from '../context.js';
import { parseListen, parsePositiveInt } from '../parse-options.js';

const log = logger('control:serve');

// How often each instance looks for hook deliveries that are due (one cheap query per hook).
const HOOK_POLL_MS = 1000;

// Node's TLS session-ticket keys: 48 bytes (a name, an HMAC key, an AES key).
export const TICKET_KEYS_BYTES = 48;

// --tls-ticket-keys: a file of exactly 48 bytes, or of their base64 (`openssl rand 48` or
// `openssl rand -base64 48`). A secret: whoever has it can resume, and so decrypt a TLS 1.2
// session's traffic, so it must be a regular file that others cannot read and group cannot write.
export function readTicketKeys(file: string): Buffer {
  const cannot = (err: unknown) => new StewardError('NOT_FOUND', `cannot read the TLS ticket keys ${file}: ${(err as Error).message}`, { cause: err });
  let st;
  try {
    st = statSync(file);
  } catch (err) {
    throw cannot(err);
  }
  if (!st.isFile()) throw new StewardError('USAGE', `the TLS ticket keys ${file} are not a regular file`);
  // Group read is allowed, as for the TLS key of the package's settings (root:steward-control,
  // 0640); group write, or any access for others, is not.
  if ((st.mode & 0o027) !== 0) throw new StewardError('FORBIDDEN', `the TLS ticket keys ${file} are open to others, or writable by group (mode ${(st.mode & 0o7777).toString(8)}): chmod 600 or 640 ${file}`);
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (err) {
    throw cannot(err);
  }
  if (bytes.length === TICKET_KEYS_BYTES) return bytes;
  const text = bytes.toString('latin1').trim();
  const decoded = /^[A-Za-z0-9+/]+={0,2}$/.test(text) ? Buffer.from(text, 'base64') : null;
  if (decoded?.length === TICKET_KEYS_BYTES) return decoded;
  throw new StewardError('USAGE', `the TLS ticket keys ${file} must hold ${TICKET_KEYS_BYTES} bytes, raw or in base64 (make them with: openssl rand 48 > ${file}; chmod 600 ${file})`);
}

interface TlsFiles {
  cert: string;
  key: string;
  ticketKeys: string | undefined;
}

// The TLS files read and checked: each readable, the ticket keys by readTicketKeys's rules, and
// the certificate and key a pair that makes a TLS context (USAGE with OpenSSL's reason if not).
function loadServeTls(f: TlsFiles): ServeTls {
  const t: ServeTls = { cert: readPem(f.cert, 'the TLS certificate'), key: readPem(f.key, 'the TLS key'), ...(f.ticketKeys === undefined ? {} : { ticketKeys: readTicketKeys(f.ticketKeys) }) };
  try {
    checkServeTls(t);
  } catch (err) {
    throw new StewardError('USAGE', `the TLS certificate ${f.cert} and key ${f.key} cannot be used together: ${(err as Error).message}`, { cause: err });
  }
  return t;
}

// Reads the TLS files again and puts them in use on every https listener, or, if any of them
// is refused, on none: the listeners keep what they had, and the log says why. Open connections
// keep the certificate they were made with. Returns what it put in use (null: nothing).
function reloadTls(files: TlsFiles | null, listeners: { reloadTls?(t: ServeTls): void }[]): ServeTls | null {
  if (!files) {
    log('SIGHUP: plain http, no TLS files to read again');
    return null;
  }
  let t: ServeTls;
  try {
    t = loadServeTls(files);
  } catch (err) {
    log('SIGHUP: TLS not reloaded, the listeners keep the certificate they have: %s', (err as Error).message);
    return null;
  }
  for (const l of listeners) l.reloadTls?.(t);
  log('SIGHUP: TLS reloaded: certificate %s (%s)%s', files.cert, describeCert(t.cert), t.ticketKeys ? `, ticket keys ${files.ticketKeys}` : '');
  return t;
}

function describeCert(pem: string | Buffer): string {
  try {
    const c = new X509Certificate(pem);
    return `${c.subject.replace(/\n/g, ', ')}, sha256 ${c.fingerprint256}, valid until ${c.validTo}`;
  } catch (err) {
    return `not described: ${(err as Error).message}`;
  }
}

function readPem(file: string, what: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new StewardError('NOT_FOUND', `cannot read ${what} ${file}: ${(err as Error).message}`, { cause: err });
  }
}

// serve's options, as commander gives them.
export type ServeFlags = { listen: string; tlsCert?: string; tlsKey?: string; tlsTicketKeys?: string; heartbeatSeconds: string; insecure?: boolean; init?: boolean; metricsListen?: string; maxDownloads: string; anonymousDownloads?: string; downloadMinRate: string; downloadRateWindow: string; maxWaits: string; hookTimeout: string } & AdminFlags;

// Runs serve until SIGTERM or SIGINT.
export async function serve(o: ServeFlags, cmd: Command): Promise<void> {
  enableDefaultLogs('steward:control:*');
  const listen = parseListen(o.listen);
  const metricsListen = o.metricsListen === undefined ? null : parseListen(o.metricsListen);
  const heartbeatSeconds = parsePositiveInt(o.heartbeatSeconds, '--heartbeat-seconds', 86_400);
  const maxDownloads = parsePositiveInt(o.maxDownloads, '--max-downloads', 100_000);
  const maxWaits = parsePositiveInt(o.maxWaits, '--max-waits', 1_000_000);
  const hookTimeoutMs = parsePositiveInt(o.hookTimeout, '--hook-timeout', 60) * 1000;
  const caFile = (cmd.optsWithGlobals() as { caFile?: string }).caFile;
  // Read once at the start, so that a missing file stops serve now rather than every delivery.
  const hookCa = caFile === undefined ? undefined : await readExtraCa(caFile).catch((err: unknown) => {
    throw new StewardError('NOT_FOUND', `cannot read --ca-file ${caFile}: ${(err as Error).message.replace(/^cannot read the CA file \S+: /, '')}`, { cause: err });
  });
  const anonymousDownloads = o.anonymousDownloads === undefined ? undefined : o.anonymousDownloads === '0' ? 0 : parsePositiveInt(o.anonymousDownloads, '--anonymous-downloads', maxDownloads);
  const minRate = o.downloadMinRate === '0' ? 0 : parsePositiveInt(o.downloadMinRate, '--download-min-rate', 1_000_000_000);
  const minDownloadRate = minRate === 0 ? null : { bytesPerSecond: minRate, windowMs: parsePositiveInt(o.downloadRateWindow, '--download-rate-window', 3600) * 1000 };
  if (!!o.tlsCert !== !!o.tlsKey) throw new StewardError('USAGE', '--tls-cert and --tls-key go together');
  if (o.tlsTicketKeys !== undefined && !o.tlsCert) throw new StewardError('USAGE', '--tls-ticket-keys goes with --tls-cert and --tls-key');
  const tlsFiles = o.tlsCert && o.tlsKey ? { cert: o.tlsCert, key: o.tlsKey, ticketKeys: o.tlsTicketKeys } : null;
  const tls = tlsFiles ? loadServeTls(tlsFiles) : undefined;
  if (!tls && !listen.loopback && !o.insecure) {
    throw new StewardError('FORBIDDEN', `refusing plain http on non-loopback ${listen.host}: nodes would send heartbeats in clear text; pass --tls-cert/--tls-key, or --insecure`);
  }
  const admin = adminListenOf(o, listen, !!tls);
  const stopAt = stopPointsFromEnv(process.env) ?? undefined;
  const db = dbSpecOf(cmd);
  const artifactsDir = artifactsDirFor(cmd, db);
  // SIGHUP (`systemctl reload`): the TLS files again, for the connections from then on, on
  // the listeners started by then. Handled from here on, so that it never ends serve.
  const listeners: { reloadTls?(t: ServeTls): void }[] = [];
  // What a listener started later is made with: the files as last read.
  let tlsNow = tls;
  const onHup = () => (tlsNow = reloadTls(tlsFiles, listeners) ?? tlsNow);
  process.on('SIGHUP', onHup);
  const store = await openStore(db, { groupSync: true, create: o.init === true }).catch((err: unknown) => {
    process.off('SIGHUP', onHup);
    throw err;
  });
  // Every listener started so far is closed on the way out, also when a later one cannot
  // start: serve then ends with that one's error (USAGE), never runs on without it.
  let adminServer: AdminServer | null = null;
  let metrics: ServeMetrics | null = null;
  let server: ControlServer | null = null;
  let hooks: HookDeliverer | null = null;
  try {
    await store.write((tx) => tx.settings.set('heartbeatSeconds', String(heartbeatSeconds)));
    // Why a dynamic import: without --metrics-listen, prom-client is never loaded. The same
    // address as --listen (a port other than 0) is a choice: the fleet listener serves them.
    const shared = metricsListen !== null && metricsListen.port !== 0 && metricsListen.port === listen.port && metricsListen.host === listen.host;
    if (metricsListen) {
      const { startServeMetrics } = await import('../../metrics/serve-metrics.js');
      metrics = await named('--metrics-listen', startServeMetrics(store, shared ? null : metricsListen));
    }
    const router = admin && createAdminRouter({ store: metrics?.store ?? store, artifactsDir, trustedProxies: admin.trusted, clock: systemClock, hookCaFile: caFile });
    server = await named('--listen', startControlServer({
      store: metrics?.store ?? store, artifactsDir, maxDownloads, anonymousDownloads, minDownloadRate, maxWaits, host: listen.host, port: listen.port, tls: tlsNow, heartbeatSeconds, clock: systemClock,
      metrics: metrics?.heartbeats, answerMetrics: shared ? metrics?.answerMetrics : undefined, stopAt,
      ...(admin?.shared && router ? { admin: router } : {}),
    }));
    listeners.push(server);
    if (admin && router && !admin.shared) listeners.push((adminServer = await named('--admin-listen', startAdminServer({ router, host: admin.host, port: admin.port, tls: tlsNow }))));
    hooks = startHookDeliverer({ store, clock: systemClock, pollMs: HOOK_POLL_MS, timeoutMs: hookTimeoutMs, ca: hookCa });
    const adminUrl = admin ? (adminServer?.url ?? server.url) : null;
    const urls = { listening: server.url, ...(adminUrl ? { admin: adminUrl } : {}), ...(metrics ? { metrics: `${metrics.url ?? server.url}/metrics` } : {}) };
    process.stdout.write(
      jsonOf(cmd)
        ? JSON.stringify(urls) + '\n'
        : `steward-control listening on ${server.url}\n${adminUrl ? `steward-control admin API on ${adminUrl}\n` : ''}${metrics ? `metrics at ${urls.metrics}\n` : ''}`,
    );
    log('listening url=%s admin=%s db=%s heartbeatSeconds=%d%s', server.url, adminUrl ?? '-', store.location, heartbeatSeconds, metrics ? ` metrics=${urls.metrics}` : '');
    await new Promise<void>((resolve) => {
      const stop = (sig: string) => {
        log('stopping on %s', sig);
        resolve();
      };
      process.once('SIGTERM', () => stop('SIGTERM'));
      process.once('SIGINT', () => stop('SIGINT'));
    });
  } finally {
    process.off('SIGHUP', onHup);
    await hooks?.close();
    await server?.close();
    await adminServer?.close();
    await metrics?.close();
    await store.close();
  }
}

// A listener's start, its error (USAGE from listen.ts) naming the option that gave the address.
async function named<T>(flag: string, starting: Promise<T>): Promise<T> {
  try {
    return await starting;
  } catch (err) {
    if (err instanceof StewardError) throw new StewardError(err.code, `${flag}: ${err.message}`, { cause: err });
    throw err;
  }
}

interface AdminFlags {
  adminListen?: string;
  trustedProxy: string[];
  insecure?: boolean;
}

// Where the admin API listens (null: nowhere), whether that is the fleet's own listener, and
// the trusted proxies. Plain http on a non-loopback address is refused as --listen's is.
function adminListenOf(o: AdminFlags, listen: { host: string; port: number }, tls: boolean): { host: string; port: number; shared: boolean; trusted: TrustedProxies } | null {
  if (o.adminListen === undefined) {
    if (o.trustedProxy.length) throw new StewardError('USAGE', '--trusted-proxy goes with --admin-listen');
    return null;
  }
  const a = parseListen(o.adminListen, '--admin-listen');
  if (!tls && !a.loopback && !o.insecure) {
    throw new StewardError('FORBIDDEN', `refusing plain http on non-loopback ${a.host} for --admin-listen: operator tokens would cross the network in clear text; pass --tls-cert/--tls-key, or --insecure behind a TLS proxy (--trusted-proxy)`);
  }
  let trusted: TrustedProxies;
  try {
    trusted = parseTrustedProxies(o.trustedProxy);
  } catch (err) {
    throw new StewardError('USAGE', `--trusted-proxy: ${(err as Error).message}`, { cause: err });
  }
  return { host: a.host, port: a.port, shared: a.host === listen.host && a.port === listen.port, trusted };
}
