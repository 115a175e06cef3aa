import { promises as fsp, constants as fsc } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import http, { type ClientRequest, type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Readable } from 'node:stream';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import type { FetchSettings } from '../core/config-schema.js';
import { StewardError, toStewardError } from '../core/errors.js';
import { isLoopbackHost } from '../core/name-checks.js';
import { writeHashedFile, type HashedFile, type HashingWriter } from './hashing-writer.js';
import { logger } from './log.js';
import { readOwnVersion } from './own-version.js';
import { readTrustedFile, trustRule, type TrustScope } from './trusted-file.js';

const log = logger('platform:fetch');

export interface FetchOptions {
  url: string; // from a signed manifest
  destFile: string; // created with O_EXCL|O_NOFOLLOW mode 0o600 (fails if it exists)
  maxBytes: number; // the manifest's `size`: abort at maxBytes + 1 bytes received
  settings: FetchSettings; // deadlineMs (total), minBytesPerSecond over minSpeedWindowMs, maxRedirects
  caFile?: string; // extra CA (PEM) for https, added to Node's default CAs (default: settings.caFile)
  caTrust?: TrustScope; // when set, the CA file must pass the trust rule (trusted-file.ts): the helper's fetches
  allowFile?: boolean; // `file:` URLs allowed (admin.sock only)
  signal?: AbortSignal;
  onProgress?: (bytes: number, total: number) => void;
}

export type FetchResult = HashedFile;

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const USER_AGENT = `steward-helper/${readOwnVersion()}`;

function fetchFailed(message: string, cause?: unknown): StewardError {
  return new StewardError('FETCH_FAILED', message, cause === undefined ? {} : { cause });
}

// What error messages and logs show of a URL: no credentials, no query (presigned URLs carry secrets).
function describeUrl(u: URL): string {
  return `${u.protocol}//${u.host}${u.pathname}`;
}

// Parses a source URL and refuses, before any connection, what DESIGN §3.1 forbids:
// anything but https, http to a non-loopback host, credentials, and file: unless allowed.
export function checkFetchUrl(raw: string, allowFile = false): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch (err) {
    throw fetchFailed('the release URL is not a valid URL', err);
  }
  if (u.username !== '' || u.password !== '') {
    throw fetchFailed(`credentials in the release URL are refused (${u.protocol}//${u.host})`);
  }
  if (u.protocol === 'https:') return u;
  if (u.protocol === 'http:') {
    if (isLoopbackHost(u.hostname)) return u;
    throw fetchFailed(`plain http is allowed only to a loopback host (127.0.0.0/8, ::1, localhost), not ${u.host}; use https`);
  }
  if (u.protocol === 'file:') {
    if (allowFile) return u;
    throw fetchFailed('file: URLs are accepted only on admin.sock');
  }
  throw fetchFailed(`the URL scheme ${u.protocol} is not allowed; use https`);
}

// Downloads a release tarball into destFile, hashing while streaming, under the
// limits of DESIGN §3.1. destFile is removed on any failure.
export async function fetchToFile(opts: FetchOptions): Promise<FetchResult> {
  const url = checkFetchUrl(opts.url, opts.allowFile === true);
  if (url.protocol === 'file:') {
    let file: string;
    try {
      file = fileURLToPath(url);
    } catch (err) {
      throw fetchFailed(`not a local file URL: ${describeUrl(url)}`, err);
    }
    const { destFile, maxBytes, signal, onProgress } = opts;
    return copyLocalToFile({ path: file, destFile, maxBytes, exactSize: true, signal, onProgress });
  }
  if (opts.signal?.aborted) throw fetchFailed(`fetch of ${describeUrl(url)} aborted`, opts.signal.reason);
  const ca = await readExtraCa(opts.caFile ?? opts.settings.caFile, opts.caTrust);
  log('fetch start url=%s maxBytes=%d', describeUrl(url), opts.maxBytes);
  const result = await writeHashedFile({ destFile: opts.destFile, total: opts.maxBytes, onProgress: opts.onProgress }, (w) =>
    download(url, opts, ca, w),
  );
  log('fetch done url=%s bytes=%d', describeUrl(url), result.bytes);
  return result;
}

async function download(first: URL, opts: FetchOptions, ca: string[] | undefined, w: HashingWriter): Promise<void> {
  const where = describeUrl(first);
  const guard = new TransferGuard(opts.settings, where, () => w.bytes, opts.signal);
  try {
    let url = first;
    for (let redirects = 0; ; redirects++) {
      const res = await request(url, ca, guard);
      const status = res.statusCode ?? 0;
      if (REDIRECT_STATUSES.has(status)) {
        res.destroy();
        url = nextHop(url, res.headers.location, redirects, opts.settings.maxRedirects, where);
        log('redirect to=%s', describeUrl(url));
        continue;
      }
      if (status < 200 || status > 299) {
        res.destroy();
        throw fetchFailed(`${describeUrl(url)} answered HTTP ${status}`);
      }
      checkContentLength(res.headers['content-length'], opts.maxBytes, where);
      for await (const chunk of res as AsyncIterable<Buffer>) {
        if (w.bytes + chunk.length > opts.maxBytes) {
          throw fetchFailed(`the download from ${where} is larger than the manifest's size (${opts.maxBytes} bytes)`);
        }
        await w.write(chunk);
      }
      if (w.bytes < opts.maxBytes) {
        throw fetchFailed(`the download from ${where} is shorter than the manifest's size (${w.bytes} of ${opts.maxBytes} bytes)`);
      }
      return;
    }
  } catch (err) {
    if (err instanceof StewardError) throw err;
    const e = err as NodeJS.ErrnoException;
    throw guard.error ?? fetchFailed(`fetching ${where} failed: ${e?.message ?? String(err)}${e?.code ? ` (${e.code})` : ''}`, err);
  } finally {
    guard.dispose();
  }
}

function nextHop(from: URL, location: string | undefined, done: number, max: number, where: string): URL {
  if (!location) throw fetchFailed(`${describeUrl(from)} answered a redirect without a Location`);
  if (done >= max) throw fetchFailed(`too many redirects (more than ${max}) fetching ${where}`);
  let to: URL;
  try {
    to = new URL(location, from);
  } catch (err) {
    throw fetchFailed(`${describeUrl(from)} answered a redirect to an invalid Location`, err);
  }
  if (to.origin !== from.origin) {
    throw fetchFailed(`redirect from ${from.origin} to ${to.origin} refused: redirects must stay on the same origin`);
  }
  if (to.username !== '' || to.password !== '') throw fetchFailed(`redirect with credentials refused (${to.origin})`);
  return to;
}

// A Content-Length that disagrees with the manifest is refused before any byte is stored.
function checkContentLength(header: string | undefined, maxBytes: number, where: string): void {
  if (header === undefined || !/^\d+$/.test(header)) return;
  const n = Number(header);
  if (n > maxBytes) {
    throw fetchFailed(`the download from ${where} is larger than the manifest's size (Content-Length ${n}, manifest ${maxBytes} bytes)`);
  }
  if (n < maxBytes) {
    throw fetchFailed(`the download from ${where} is shorter than the manifest's size (Content-Length ${n}, manifest ${maxBytes} bytes)`);
  }
}

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

function request(u: URL, ca: string[] | undefined, guard: TransferGuard): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    // No cookies, no compression: the hashed bytes are exactly the bytes the manifest names.
    const req = startRequest(u, 'GET', { 'Accept-Encoding': 'identity', 'User-Agent': USER_AGENT, Accept: '*/*' }, ca);
    guard.attachRequest(req);
    req.once('response', (res) => {
      guard.attachResponse(res);
      resolve(res);
    });
    req.once('error', reject);
    req.end();
  });
}

// Enforces the total deadline, the minimum average speed over each full window, and
// the caller's signal, by destroying the current request with the reason.
class TransferGuard {
  error: StewardError | undefined;
  private req: ClientRequest | undefined;
  private res: IncomingMessage | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly onAbort: () => void;

  constructor(
    settings: FetchSettings,
    private readonly where: string,
    private readonly bytes: () => number,
    private readonly signal?: AbortSignal,
  ) {
    const start = performance.now();
    this.timers.push(
      setTimeout(() => {
        this.fail(fetchFailed(`the deadline of ${settings.deadlineMs} ms passed fetching ${where} (${bytes()} bytes received)`));
      }, settings.deadlineMs),
    );
    if (settings.minBytesPerSecond > 0) {
      const windowMs = settings.minSpeedWindowMs;
      const samples = [{ t: start, bytes: 0 }];
      const tick = () => {
        const now = performance.now();
        samples.push({ t: now, bytes: bytes() });
        let i = -1;
        while (i + 1 < samples.length && (samples[i + 1] as { t: number }).t <= now - windowMs) i++;
        if (i < 0) return;
        samples.splice(0, i);
        const from = samples[0] as { t: number; bytes: number };
        const rate = ((bytes() - from.bytes) * 1000) / (now - from.t);
        if (rate < settings.minBytesPerSecond) {
          this.fail(
            fetchFailed(
              `the download from ${where} is too slow: ${Math.floor(rate)} bytes/s over ${Math.round(now - from.t)} ms, below ${settings.minBytesPerSecond} bytes/s`,
            ),
          );
        }
      };
      this.timers.push(setInterval(tick, Math.max(10, Math.floor(windowMs / 5))));
    }
    this.onAbort = () => this.fail(fetchFailed(`fetch of ${where} aborted`, signal?.reason));
    signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  attachRequest(req: ClientRequest): void {
    this.req = req;
    this.res = undefined;
    if (this.error) req.destroy(this.error);
  }

  attachResponse(res: IncomingMessage): void {
    this.res = res;
    if (this.error) res.destroy(this.error);
  }

  fail(err: StewardError): void {
    if (this.error) return;
    this.error = err;
    log('fetch stopped url=%s reason=%s', this.where, err.message);
    this.res?.destroy(err);
    this.req?.destroy(err);
  }

  dispose(): void {
    for (const t of this.timers) clearTimeout(t);
    this.signal?.removeEventListener('abort', this.onAbort);
    this.res?.destroy();
    this.req?.destroy();
  }
}

// A CA bundle larger than this is not a CA file (the whole Mozilla bundle is about 220 KB).
const MAX_CA_BYTES = 4 * 1024 * 1024;

// Node's default CAs plus the PEM in `caFile`, or undefined when no file is named. With `trust`
// (root reads it: the helper, doctor) the file must pass the trust rule, else CONFIG_INVALID.
export async function readExtraCa(caFile: string | undefined, trust?: TrustScope): Promise<string[] | undefined> {
  if (!caFile) return undefined;
  let pem: string;
  try {
    if (trust) {
      const got = await readTrustedFile(caFile, trust, MAX_CA_BYTES);
      if (got.state === 'untrusted') throw new StewardError('CONFIG_INVALID', `the CA file ${caFile} is not trusted: ${got.why}; ${trustRule(trust)}`);
      if (got.state === 'missing') throw fetchFailed(`cannot read the CA file ${caFile}: it does not exist`);
      pem = got.bytes.toString('utf8');
    } else {
      pem = await fsp.readFile(caFile, 'utf8');
    }
  } catch (err) {
    if (err instanceof StewardError) throw err;
    throw fetchFailed(`cannot read the CA file ${caFile}: ${(err as Error).message}`, err);
  }
  return [...tls.rootCertificates, pem];
}

export interface CopyLocalOptions {
  path: string;
  destFile: string;
  maxBytes: number;
  // The file must hold exactly maxBytes (a `file:` URL from a manifest); else at most maxBytes.
  exactSize?: boolean;
  signal?: AbortSignal;
  onProgress?: (bytes: number, total: number) => void;
}

// Copies a local file (admin.sock) into destFile, hashing while copying. The source is
// opened with O_NOFOLLOW and must be a regular file; destFile is removed on any failure.
export async function copyLocalToFile(opts: CopyLocalOptions): Promise<FetchResult> {
  const sizeName = opts.exactSize ? "the manifest's size" : 'the allowed size';
  let fh: FileHandle;
  try {
    // O_NONBLOCK: opening a FIFO for reading must not wait for a writer before fstat refuses it.
    fh = await fsp.open(opts.path, fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK | fsc.O_NOCTTY);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new StewardError('NOT_FOUND', `${opts.path} does not exist`, { cause: err });
    if (code === 'ELOOP') throw fetchFailed(`${opts.path} is a symbolic link, not a regular file`, err);
    throw toStewardError(err, 'FETCH_FAILED', `cannot open ${opts.path}`);
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw fetchFailed(`${opts.path} is not a regular file`);
    if (st.size > opts.maxBytes) throw fetchFailed(`${opts.path} is larger than ${sizeName} (${st.size} > ${opts.maxBytes} bytes)`);
    if (opts.exactSize && st.size < opts.maxBytes) {
      throw fetchFailed(`${opts.path} is shorter than ${sizeName} (${st.size} < ${opts.maxBytes} bytes)`);
    }
    if (opts.signal?.aborted) throw fetchFailed(`copy of ${opts.path} aborted`, opts.signal.reason);
    const total = opts.exactSize ? opts.maxBytes : st.size;
    return await writeHashedFile({ destFile: opts.destFile, total, onProgress: opts.onProgress }, async (w) => {
      const buf = Buffer.allocUnsafe(64 * 1024);
      for (;;) {
        if (opts.signal?.aborted) throw fetchFailed(`copy of ${opts.path} aborted`, opts.signal.reason);
        const { bytesRead } = await fh.read(buf, 0, buf.length, null).catch((err: unknown) => {
          throw toStewardError(err, 'IO_ERROR', `reading ${opts.path}`);
        });
        if (bytesRead === 0) break;
        // The file may grow after fstat: the limit holds on the bytes actually read.
        if (w.bytes + bytesRead > opts.maxBytes) throw fetchFailed(`${opts.path} is larger than ${sizeName} (${opts.maxBytes} bytes)`);
        await w.write(buf.subarray(0, bytesRead));
      }
      if (opts.exactSize && w.bytes < opts.maxBytes) {
        throw fetchFailed(`${opts.path} is shorter than ${sizeName} (${w.bytes} < ${opts.maxBytes} bytes)`);
      }
    });
  } finally {
    await fh.close().catch(() => {});
  }
}

export interface StreamToFileOptions {
  stream: Readable; // consumed; destroyed on failure or abort
  destFile: string;
  expectedBytes: number;
  signal?: AbortSignal;
  onProgress?: (bytes: number, total: number) => void;
}

// Stores an upload of exactly expectedBytes into destFile, hashing while writing.
// destFile is removed on any failure.
export async function streamToFile(opts: StreamToFileOptions): Promise<FetchResult> {
  const aborted = () => fetchFailed('the upload was aborted', opts.signal?.reason);
  if (opts.signal?.aborted) {
    opts.stream.destroy();
    throw aborted();
  }
  return writeHashedFile({ destFile: opts.destFile, total: opts.expectedBytes, onProgress: opts.onProgress }, async (w) => {
    const onAbort = () => opts.stream.destroy(aborted());
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for await (const chunk of opts.stream as AsyncIterable<Buffer | string>) {
        const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
        if (w.bytes + buf.length > opts.expectedBytes) {
          throw fetchFailed(`the upload is larger than its announced size (${opts.expectedBytes} bytes)`);
        }
        await w.write(buf);
      }
    } catch (err) {
      if (err instanceof StewardError) throw err;
      throw fetchFailed(`the upload failed after ${w.bytes} bytes: ${(err as Error)?.message ?? String(err)}`, err);
    } finally {
      opts.signal?.removeEventListener('abort', onAbort);
    }
    if (w.bytes < opts.expectedBytes) {
      throw fetchFailed(`the upload is shorter than its announced size (${w.bytes} of ${opts.expectedBytes} bytes)`);
    }
  });
}
