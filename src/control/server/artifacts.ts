// `GET /v1/artifacts/<app>/<version>.tgz`: the kept tarball of a catalog release.
import { constants as fsc, createReadStream, promises as fsp } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream';
import { isAppName, isVersion } from '../../core/names.js';
import { artifactPath } from '../catalog/artifact-path.js';
import type { ControlStore } from '../store/store.js';
import { logger } from '../../platform/log.js';
import type { Downloader, DownloadSlots } from './download-access.js';
import { sendJson } from './send.js';
import { errorAnswer } from './answer.js';
import { DEFAULT_MIN_DOWNLOAD_RATE, type MinDownloadRate } from './download-limits.js';

const log = logger('control:artifacts');

// The app and version named by the rest of an artifact path, or null. Checked against the
// name schemas before any file path is built; nothing is percent-decoded.
export function parseArtifactPath(rest: string): { app: string; version: string } | null {
  const parts = rest.split('/');
  if (parts.length !== 2) return null;
  const [app, file] = parts as [string, string];
  if (!file.endsWith('.tgz')) return null;
  const version = file.slice(0, -'.tgz'.length);
  return isAppName(app) && isVersion(version) ? { app, version } : null;
}

// The Retry-After of a download answered 503 because every slot is taken (--max-downloads,
// download-limits.ts), which the helper's fetch waits out.
export const DOWNLOAD_RETRY_AFTER_S = 5;

// A Range header's one byte range within a body of `size` bytes (RFC 9110 §14.1.2), "whole" for a
// header this server ignores and answers with the whole body (none, not bytes, several ranges,
// malformed: a server may ignore Range), or "unsatisfiable" (answered 416).
export function byteRange(header: string | undefined, size: number): { start: number; end: number } | 'whole' | 'unsatisfiable' {
  if (header === undefined) return 'whole';
  const m = /^bytes=(\d{0,15})-(\d{0,15})$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return 'whole';
  if (m[1] === '') {
    // A suffix: the last N bytes.
    const n = Number(m[2]);
    if (n === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== '' && Number(m[2]) < start) return 'whole';
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}

// The headers every answer with a body of the tarball has: it never changes under its URL (a
// version is never replaced, add-release.ts), so caches may keep it; the ETag is its integrity.
function artifactHeaders(release: { integrity: string }): Record<string, string> {
  return { 'content-type': 'application/gzip', 'accept-ranges': 'bytes', etag: `"${release.integrity}"`, 'cache-control': 'public, max-age=31536000, immutable' };
}

// Streams the tarball (or the one byte range asked), or answers 404, 416, or 503 when this
// instance already sends `slots.max` downloads.
export async function sendArtifact(
  store: ControlStore,
  artifactsDir: string,
  rest: string,
  req: Pick<IncomingMessage, 'headers'>,
  res: ServerResponse,
  headOnly: boolean,
  slots: DownloadSlots,
  who: Downloader,
  minRate: MinDownloadRate | null = DEFAULT_MIN_DOWNLOAD_RATE,
): Promise<void> {
  const names = parseArtifactPath(rest);
  const release = names ? await store.read((tx) => tx.releases.get(names.app, names.version)) : null;
  if (!names || !release || release.artifactPath === null) return sendJson(res, errorAnswer(404, 'NOT_FOUND', 'no such artifact'));
  const slot = slots.take(who);
  if ('busy' in slot) {
    res.setHeader('retry-after', String(DOWNLOAD_RETRY_AFTER_S));
    const why =
      slot.busy === 'full'
        ? `this instance already sends ${slots.max} downloads`
        : slot.busy === 'anonymous'
          ? `this instance already sends the ${slots.anonymousMax} downloads it allows without a node's or operator's credential`
          : `${who.kind} ${who.id} already has ${slots.perClientMax} downloads under way here`;
    return sendJson(res, errorAnswer(503, 'BUSY', `${why}; retry after ${DOWNLOAD_RETRY_AFTER_S} s`));
  }
  res.once('close', slot.release);
  let fh;
  try {
    // Why O_NOFOLLOW: the artifacts folder may be writable by others; never serve through a symlink.
    fh = await fsp.open(artifactPath(artifactsDir, names.app, names.version), fsc.O_RDONLY | fsc.O_NOFOLLOW);
  } catch {
    return sendJson(res, errorAnswer(404, 'NOT_FOUND', `the tarball of ${names.app} ${names.version} is missing on the server`));
  }
  await sendStaticFile(fh, artifactHeaders(release), req, res, headOnly, `${names.app} ${names.version}`, minRate, `${names.app} ${names.version} to ${who.kind} ${who.id}`);
}

// Sends an open kept file (the tarball, a patch: docs/design.md §20.5) whole or the one byte range
// asked (206, or 416), with `headers`; closes it.
export async function sendStaticFile(
  fh: fsp.FileHandle,
  headers: Record<string, string>,
  req: Pick<IncomingMessage, 'headers'>,
  res: ServerResponse,
  headOnly: boolean,
  what: string,
  minRate: MinDownloadRate | null,
  to: string,
): Promise<void> {
  const st = await fh.stat();
  if (!st.isFile()) {
    await fh.close();
    return sendJson(res, errorAnswer(404, 'NOT_FOUND', 'no such artifact'));
  }
  // If-Range: the range only while the client's copy is this one (an ETag; a date is not ours).
  const ifRange = req.headers['if-range'];
  const range = ifRange === undefined || ifRange === headers.etag ? byteRange(req.headers.range, st.size) : 'whole';
  if (range === 'unsatisfiable') {
    await fh.close();
    res.setHeader('content-range', `bytes */${st.size}`);
    return sendJson(res, errorAnswer(416, 'BAD_RANGE', `the range ${JSON.stringify(String(req.headers.range).slice(0, 100))} is outside the ${st.size} bytes of ${what}`));
  }
  const part = range === 'whole' ? null : range;
  if (part) res.writeHead(206, { ...headers, 'content-range': `bytes ${part.start}-${part.end}/${st.size}`, 'content-length': String(part.end - part.start + 1) });
  else res.writeHead(200, { ...headers, 'content-length': String(st.size) });
  if (headOnly) {
    await fh.close();
    res.end();
    return;
  }
  // pipeline, not pipe: when the client hangs up mid-download, pipe() leaves the file stream
  // paused and open (its handle closed only by the garbage collector, a descriptor held per
  // aborted download meanwhile); pipeline destroys it, which closes the file, and ends the
  // response on a read error.
  const body = createReadStream('', { fd: fh, autoClose: true, ...(part ? { start: part.start, end: part.end } : {}) });
  if (minRate && minRate.bytesPerSecond > 0) cutWhenSlow(res, minRate, to);
  pipeline(body, res, () => undefined);
}

// Ends the connection of `res` when it moved fewer bytes than the minimum over a window.
function cutWhenSlow(res: ServerResponse, rate: MinDownloadRate, what: string): void {
  const socket = res.socket;
  if (!socket) return;
  const least = (rate.bytesPerSecond * rate.windowMs) / 1000;
  let mark = socket.bytesWritten;
  const timer = setInterval(() => {
    const moved = socket.bytesWritten - mark;
    mark = socket.bytesWritten;
    if (moved >= least) return;
    clearInterval(timer);
    log('download of %s cut: %d bytes in the last %d ms, under the minimum of %d B/s', what, moved, rate.windowMs, rate.bytesPerSecond);
    res.destroy();
  }, rate.windowMs);
  timer.unref();
  const stop = () => clearInterval(timer);
  res.once('finish', stop);
  res.once('close', stop);
}
