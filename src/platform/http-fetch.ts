// Downloads a release tarball over http(s) (or copies a `file:` URL) into a file, hashing while
// streaming, within the manifest's size. The pieces: fetch-url.ts (which URLs and redirects),
// http-request.ts (the request), transfer-guard.ts (deadline, minimum speed, abort), extra-ca.ts.
import type { IncomingMessage } from 'node:http';
import { fileURLToPath } from 'node:url';
import type { FetchSettings } from '../core/config-schema.js';
import { StewardError } from '../core/errors.js';
import { copyLocalToFile } from './copy-local.js';
import { readExtraCa } from './extra-ca.js';
import { describeUrl, fetchFailed } from './fetch-failed.js';
import { checkFetchUrl, isRedirect, nextHop } from './fetch-url.js';
import { writeHashedFile, type HashedFile, type HashingWriter } from './hashing-writer.js';
import { startRequest } from './http-request.js';
import { logger } from './log.js';
import { readOwnVersion } from './own-version.js';
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
  allowFile?: boolean; // `file:` URLs allowed (admin.sock only)
  signal?: AbortSignal;
  onProgress?: (bytes: number, total: number) => void;
}

export type FetchResult = HashedFile;

const USER_AGENT = `steward-helper/${readOwnVersion()}`;

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
      if (isRedirect(status)) {
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
