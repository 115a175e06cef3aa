// Downloads a release tarball over http(s) (or copies a `file:` URL) into a file, hashing while
// streaming, within the manifest's size. The pieces: fetch-url.ts (which URLs and redirects),
// http-request.ts (the request), transfer-guard.ts (deadline, minimum speed, abort), fetch-trust.ts
// (which CAs for which URL) and extra-ca.ts.
import type { IncomingMessage } from 'node:http';
import { fileURLToPath } from 'node:url';
import type { FetchSettings } from '../core/config-schema.js';
import { StewardError } from '../core/errors.js';
import { systemClock } from './clock.js';
import { copyLocalToFile } from './copy-local.js';
import { describeUrl, fetchFailed } from './fetch-failed.js';
import { checkFetchUrl, isRedirect, nextHop } from './fetch-url.js';
import { chooseCa, isTlsVerifyError, tlsVerifyFailed, type CaChoice, type ControlPlaneCa, type FetchCa } from './fetch-trust.js';
import { hashInto, writeHashedFile, type HashedFile, type HashingWriter } from './hashing-writer.js';
import { startRequest } from './http-request.js';
import { logger } from './log.js';
import { readOwnVersion } from './own-version.js';
import type { FetchAuth } from './download-auth.js';
import type { TrustScope } from './trusted-file.js';
import { TransferGuard } from './transfer-guard.js';

const log = logger('platform:fetch');

export interface FetchOptions {
  url: string; // from a signed manifest
  destFile: string; // created with O_EXCL|O_NOFOLLOW mode 0o600 (fails if it exists)
  maxBytes: number; // the manifest's `size`: abort at maxBytes + 1 bytes received
  settings: FetchSettings; // deadlineMs (total), minBytesPerSecond over minSpeedWindowMs, maxRedirects
  caFile?: string; // extra CA (PEM) for https, added to Node's default CAs (default: settings.caFile)
  caTrust?: TrustScope; // when set, the CA file must pass the trust rule (trusted-file.ts): the helper's fetches
  // The control plane's URLs and CA file: a URL on its origin is verified against its CA too (fetch-trust.ts).
  controlPlane?: ControlPlaneCa;
  allowFile?: boolean; // `file:` URLs allowed (admin.sock only)
  signal?: AbortSignal;
  onProgress?: (bytes: number, total: number) => void;
  // The node's credential for steward-control's downloads (download-auth.ts): sent only to a
  // URL of its origin, each redirect hop checked again.
  auth?: FetchAuth;
  // A JSON body to POST instead of a GET (the pack of objects a stage lacks, docs/design.md §20);
  // sent again to each redirect hop (as 307/308 would).
  body?: Buffer;
  // maxBytes is a bound, not the exact size: a shorter body is whole (a compressed file index or
  // pack, docs/design.md §20, whose caller checks what it decompresses to).
  atMost?: boolean;
  // The Accept-Encoding sent (default `identity`): a file index or pack names the compressions
  // the helper reads (docs/protocol.md); its answer's bytes are still hashed as they come.
  acceptEncoding?: string;
  // Asks only for the bytes from this offset on (`Range: bytes=N-`): the answer must be 206 from
  // exactly there, and maxBytes bounds what is left (a static patch resumed, docs/design.md §20.5).
  rangeStart?: number;
}

export type FetchResult = HashedFile;

// What a download needs of FetchOptions: where its bytes go is the writer's.
type DownloadOptions = Omit<FetchOptions, 'destFile'>;

const USER_AGENT = `steward-helper/${readOwnVersion()}`;

// Downloads a release tarball into destFile, hashing while streaming, under the
// limits of docs/design.md §3.1. destFile is removed on any failure.
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
  // Read before destFile is made: a CA file that cannot be read fails the fetch leaving nothing.
  const ca = await chooseCa(url, caOf(opts));
  log('fetch start url=%s maxBytes=%d', describeUrl(url), opts.maxBytes);
  const result = await writeHashedFile({ destFile: opts.destFile, total: opts.maxBytes, onProgress: opts.onProgress }, (w) => download(url, opts, ca, w));
  log('fetch done url=%s bytes=%d', describeUrl(url), result.bytes);
  return result;
}

// Downloads a release tarball over http(s) as fetchToFile does, under the same limits, but hands
// the bytes to `sink` as they arrive instead of writing a file (the extraction that overlaps
// the fetch, docs/design.md §3 step 4). Only http and https: a `file:` URL is copied (fetchToFile).
export async function fetchInto(opts: Omit<FetchOptions, 'destFile'>, sink: (chunk: Uint8Array) => Promise<void>): Promise<FetchResult> {
  const url = checkFetchUrl(opts.url, false);
  if (opts.signal?.aborted) throw fetchFailed(`fetch of ${describeUrl(url)} aborted`, opts.signal.reason);
  const ca = await chooseCa(url, caOf(opts));
  log('fetch start url=%s maxBytes=%d streamed', describeUrl(url), opts.maxBytes);
  const result = await hashInto({ total: opts.maxBytes, onProgress: opts.onProgress }, sink, (w) => download(url, opts, ca, w));
  log('fetch done url=%s bytes=%d', describeUrl(url), result.bytes);
  return result;
}

// How a busy server (503 or 429, e.g. steward-control past its --max-downloads) is waited out:
// at most MAX_BUSY_WAITS waits, each its Retry-After (DEFAULT_BUSY_WAIT_MS when it has none, at
// most MAX_BUSY_WAIT_MS) moved by up to 20 %, so a batch of hosts does not come back in step;
// all within the fetch's one deadline. A wait happens before any byte of the body is kept.
export const MAX_BUSY_WAITS = 60;
export const DEFAULT_BUSY_WAIT_MS = 5_000;
export const MAX_BUSY_WAIT_MS = 60_000;

// The wait a 503 or 429 asks for, in ms: Retry-After as seconds or as an HTTP date.
export function busyWaitMs(retryAfter: string | undefined, now = Date.now(), random = Math.random): number {
  let ms = DEFAULT_BUSY_WAIT_MS;
  if (retryAfter !== undefined && /^\d{1,6}$/.test(retryAfter.trim())) ms = Number(retryAfter.trim()) * 1000;
  else if (retryAfter !== undefined && Number.isFinite(Date.parse(retryAfter))) ms = Math.max(0, Date.parse(retryAfter) - now);
  return Math.round(Math.min(ms, MAX_BUSY_WAIT_MS) * (0.9 + 0.2 * random()));
}

// `ca`: the CAs of the first URL's origin, which every redirect stays on (fetch-url.ts).
async function download(first: URL, opts: DownloadOptions, ca: CaChoice, w: HashingWriter): Promise<void> {
  const where = describeUrl(first);
  const started = performance.now();
  for (let waits = 0; ; waits++) {
    const remaining = opts.settings.deadlineMs - (performance.now() - started);
    const busy = await downloadOnce(first, { ...opts, settings: { ...opts.settings, deadlineMs: Math.max(1, remaining) } }, ca, w);
    if (busy === null) return;
    const waitMs = busyWaitMs(busy.retryAfter);
    if (waits >= MAX_BUSY_WAITS) throw fetchFailed(`${busy.url} answered HTTP ${busy.status} (busy) ${waits + 1} times; giving up`);
    if (performance.now() - started + waitMs >= opts.settings.deadlineMs) {
      throw fetchFailed(`${busy.url} answered HTTP ${busy.status} (busy) and its wait of ${waitMs} ms would pass the deadline of ${opts.settings.deadlineMs} ms`);
    }
    log('busy url=%s status=%d wait=%dms', busy.url, busy.status, waitMs);
    try {
      await systemClock.sleep(waitMs, opts.signal);
    } catch (err) {
      throw fetchFailed(`fetch of ${where} aborted`, opts.signal?.reason ?? err);
    }
  }
}

// One try: the body into `w`, or the busy answer (503, 429) to wait out, before any byte is kept.
async function downloadOnce(first: URL, opts: DownloadOptions, ca: CaChoice, w: HashingWriter): Promise<{ status: number; url: string; retryAfter: string | undefined } | null> {
  const where = describeUrl(first);
  const guard = new TransferGuard(opts.settings, where, () => w.bytes, opts.signal);
  let url = first;
  try {
    for (let redirects = 0; ; redirects++) {
      const res = await request(url, ca.ca, guard, opts.auth, opts.body, opts.acceptEncoding, opts.rangeStart);
      const status = res.statusCode ?? 0;
      if (isRedirect(status)) {
        res.destroy();
        url = nextHop(url, res.headers.location, redirects, opts.settings.maxRedirects, where);
        log('redirect to=%s', describeUrl(url));
        continue;
      }
      if ((status === 503 || status === 429) && w.bytes === 0) {
        const retryAfter = res.headers['retry-after'];
        res.destroy();
        return { status, url: describeUrl(url), retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined };
      }
      if (status < 200 || status > 299) {
        res.destroy();
        throw fetchFailed(`${describeUrl(url)} answered HTTP ${status}`);
      }
      if (opts.rangeStart !== undefined && opts.rangeStart > 0) {
        const from = /^bytes (\d+)-\d+\/\d+$/.exec(String(res.headers['content-range'] ?? ''))?.[1];
        if (status !== 206 || Number(from) !== opts.rangeStart) {
          res.destroy();
          throw fetchFailed(`${describeUrl(url)} did not answer the range from byte ${opts.rangeStart} (HTTP ${status})`);
        }
      }
      checkContentLength(res.headers['content-length'], opts.maxBytes, where, opts.atMost === true);
      for await (const chunk of res as AsyncIterable<Buffer>) {
        if (w.bytes + chunk.length > opts.maxBytes) {
          throw fetchFailed(`the download from ${where} is larger than the manifest's size (${opts.maxBytes} bytes)`);
        }
        await w.write(chunk);
      }
      if (w.bytes < opts.maxBytes && opts.atMost !== true) {
        throw fetchFailed(`the download from ${where} is shorter than the manifest's size (${w.bytes} of ${opts.maxBytes} bytes)`);
      }
      return null;
    }
  } catch (err) {
    if (err instanceof StewardError) throw err;
    const e = err as NodeJS.ErrnoException;
    if (isTlsVerifyError(e)) throw guard.error ?? tlsVerifyFailed(url, e, ca, caOf(opts));
    throw guard.error ?? fetchFailed(`fetching ${where} failed: ${e?.message ?? String(err)}${e?.code ? ` (${e.code})` : ''}`, err);
  } finally {
    guard.dispose();
  }
}

// The CA settings of a fetch: its own caFile (default: settings.caFile) and the control plane's.
function caOf(opts: DownloadOptions): FetchCa {
  return { caFile: opts.caFile ?? opts.settings.caFile, caTrust: opts.caTrust, controlPlane: opts.controlPlane };
}

// A Content-Length that disagrees with the manifest is refused before any byte is stored.
function checkContentLength(header: string | undefined, maxBytes: number, where: string, atMost: boolean): void {
  if (header === undefined || !/^\d+$/.test(header)) return;
  const n = Number(header);
  if (n > maxBytes) {
    throw fetchFailed(`the download from ${where} is larger than the manifest's size (Content-Length ${n}, manifest ${maxBytes} bytes)`);
  }
  if (n < maxBytes && !atMost) {
    throw fetchFailed(`the download from ${where} is shorter than the manifest's size (Content-Length ${n}, manifest ${maxBytes} bytes)`);
  }
}

function request(u: URL, ca: string[] | undefined, guard: TransferGuard, auth: FetchAuth | undefined, body?: Buffer, acceptEncoding = 'identity', rangeStart?: number): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    // No cookies, no transfer compression: the hashed bytes are exactly the bytes sent (a file
    // index or pack asks which compression its representation comes in, docs/protocol.md).
    const headers: Record<string, string> = { 'Accept-Encoding': acceptEncoding, 'User-Agent': USER_AGENT, Accept: '*/*' };
    if (auth && u.origin === auth.origin) headers.Authorization = auth.authorization;
    if (rangeStart !== undefined && rangeStart > 0) headers.Range = `bytes=${rangeStart}-`;
    if (body) {
      headers['Content-Type'] = 'application/json';
      headers['Content-Length'] = String(body.length);
    }
    const req = startRequest(u, body ? 'POST' : 'GET', headers, ca);
    guard.attachRequest(req);
    req.once('response', (res) => {
      guard.attachResponse(res);
      resolve(res);
    });
    req.once('error', reject);
    req.end(body);
  });
}
