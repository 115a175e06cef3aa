// `GET /v1/artifacts/<app>/<version>.index.json` and `POST /v1/artifacts/<app>/<version>.pack`
// (docs/design.md §20, docs/protocol.md): a release's file index, and a pack of the objects of it
// a node asks for, behind the same credential and download slots as the tarball (artifacts.ts).
import { constants as fsc, createReadStream, promises as fsp } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { createGzip } from 'node:zlib';
import { chooseCompression, contentTypeOf, type Compression } from '../../core/compression.js';
import { isAppName, isVersion } from '../../core/names.js';
import { parseFileIndex } from '../../core/file-index.js';
import { gzipBound, packBytes, packHeader, parsePackRequest, PACK_MAX_OBJECTS } from '../../core/object-pack.js';
import { StewardError } from '../../core/errors.js';
import { indexPath, KEPT_INDEX_LIMITS, serverObjectsDir } from '../catalog/file-index-of.js';
import { ensureCompressedIndex, ensureRecord } from '../catalog/pack-records.js';
import { indexDeltaPath, patchPath } from '../catalog/patch-path.js';
import { sendStaticFile } from './artifacts.js';
import { DEFAULT_MIN_DOWNLOAD_RATE, type MinDownloadRate } from './download-limits.js';
import type { ControlStore } from '../store/store.js';
import { drained } from '../../platform/drained.js';
import { logger } from '../../platform/log.js';
import { errorAnswer } from './answer.js';
import { readBody } from './read-body.js';
import { sendJson } from './send.js';

const log = logger('control:packs');

// The largest pack request: PACK_MAX_OBJECTS hex sha256s in JSON.
const MAX_PACK_REQUEST_BYTES = PACK_MAX_OBJECTS * 67 + 64;

// The app, version and kind an artifact path names beside the tarball, or null: its index, a
// pack of its objects, or a static patch to it from version `from` (docs/design.md §20.5).
export function parseIndexPath(rest: string): { app: string; version: string; kind: 'index' | 'pack' | 'patch' | 'index-delta'; from?: string } | null {
  const d = /^([^/]+)\/([^/]+)\.index\.json\.from-([^/]+)\.zst$/.exec(rest);
  const p = d ?? /^([^/]+)\/([^/]+)\.from-([^/]+)\.patch$/.exec(rest);
  if (p) {
    const [, app, version, from] = p as unknown as [string, string, string, string];
    return isAppName(app) && isVersion(version) && isVersion(from) ? { app, version, kind: d ? 'index-delta' : 'patch', from } : null;
  }
  const m = /^([^/]+)\/([^/]+)\.(index\.json|pack)$/.exec(rest);
  if (!m) return null;
  const [, app, version, ext] = m as unknown as [string, string, string, string];
  return isAppName(app) && isVersion(version) ? { app, version, kind: ext === 'pack' ? 'pack' : 'index' } : null;
}

async function openKept(file: string): Promise<fsp.FileHandle | null> {
  // Why O_NOFOLLOW: the artifacts folder may be writable by others; never serve through a symlink.
  return fsp.open(file, fsc.O_RDONLY | fsc.O_NOFOLLOW).catch(() => null);
}

// The compression an index or pack request asks for (docs/protocol.md): zstd when its
// Accept-Encoding names zstd and this runtime has it, gzip otherwise; and whether the asker is a
// helper from before §20.5, which sends `Accept-Encoding: identity` and bounds a pack at
// gzipBound() of its length.
function askedFor(req: IncomingMessage): { c: Compression; old: boolean } {
  const accept = req.headers['accept-encoding'];
  const a = typeof accept === 'string' ? accept : undefined;
  return { c: chooseCompression(a), old: a === undefined || !/\b(gzip|zstd)\b/i.test(a) };
}

function compressedHeaders(c: Compression, length: number): Record<string, string> {
  // Content-Type, not Content-Encoding: the bytes are the representation, which no client or
  // proxy on the way decodes for the helper; Vary, as the choice follows Accept-Encoding.
  return { 'content-type': contentTypeOf(c), 'content-length': String(length), vary: 'Accept-Encoding' };
}

// Writes a file's bytes to `res`, waiting on its drain; false once the client is gone.
async function writeFileTo(res: ServerResponse, file: string): Promise<boolean> {
  const fh = await openKept(file);
  if (!fh) throw new StewardError('NOT_FOUND', `${path.basename(file)} is missing on the server`);
  try {
    for await (const chunk of createReadStream('', { fd: fh, autoClose: false, start: 0 }) as AsyncIterable<Buffer>) {
      if (res.destroyed) return false;
      if (!res.write(chunk)) await drained(res);
    }
  } finally {
    await fh.close();
  }
  return !res.destroyed;
}

// Sends the static patch to a catalog release from `from` (whole, or the one byte range asked:
// it is a kept file, as the tarball), or 404 when none was made.
// Also the zstd delta of its index from `from`'s index (`index-delta`).
export async function sendPatch(store: ControlStore, artifactsDir: string, names: { app: string; version: string; from: string; kind?: 'patch' | 'index-delta' }, req: IncomingMessage, res: ServerResponse, headOnly: boolean, minRate: MinDownloadRate | null = DEFAULT_MIN_DOWNLOAD_RATE): Promise<void> {
  const [to, from] = await store.read(async (tx) => [await tx.releases.get(names.app, names.version), await tx.releases.get(names.app, names.from)]);
  const delta = names.kind === 'index-delta';
  const fh = to && from ? await openKept((delta ? indexDeltaPath : patchPath)(artifactsDir, names.app, names.version, names.from)) : null;
  if (!fh) return sendJson(res, errorAnswer(404, 'NOT_FOUND', `there is no ${delta ? 'index delta' : 'patch'} of ${names.app} from ${names.from} to ${names.version} here`));
  const st = await fh.stat();
  // The patch never changes while both releases stay (remade identically at a refresh): its size
  // and time name it for If-Range.
  const headers = { 'content-type': delta ? 'application/zstd' : 'application/octet-stream', 'accept-ranges': 'bytes', etag: `"patch-${st.size}-${Math.trunc(st.mtimeMs)}"`, 'cache-control': 'no-cache' };
  await sendStaticFile(fh, headers, req, res, headOnly, `the patch of ${names.app} from ${names.from} to ${names.version}`, minRate, `a patch of ${names.app}`);
}

// Sends the kept index of a catalog release, or 404: its compressed copy kept beside it
// (pack-records.ts), made once if absent.
export async function sendIndex(store: ControlStore, artifactsDir: string, names: { app: string; version: string }, req: IncomingMessage, res: ServerResponse, headOnly: boolean): Promise<void> {
  const release = await store.read((tx) => tx.releases.get(names.app, names.version));
  const { c } = askedFor(req);
  const kept = release ? await ensureCompressedIndex(indexPath(artifactsDir, names.app, names.version), c).catch(() => null) : null;
  if (!kept) return sendJson(res, errorAnswer(404, 'NOT_FOUND', `${names.app} ${names.version} has no file index here`));
  // Compressed: the signed integrity and size are the uncompressed index's (docs/design.md §20).
  res.writeHead(200, { ...compressedHeaders(c, kept.bytes), 'cache-control': 'public, max-age=31536000, immutable' });
  if (headOnly) return void res.end();
  try {
    if (await writeFileTo(res, kept.file)) res.end();
  } catch (err) {
    log('index of %s %s cut: %s', names.app, names.version, (err as Error).message);
    res.destroy();
  }
}

// The size of each object of the kept index `file`, by sha256, from the last few indexes read
// while the file is the one read (same inode, size and mtime), else read and parsed. Every host
// of a rollout asks for a pack of the same release: parsing its index (10,000 entries, 20 ms of
// CPU) for each was most of the time before the pack's first byte. Rejects with the read's error
// (ENOENT: no index) or the parse's.
async function indexSizes(file: string): Promise<ReadonlyMap<string, number>> {
  const fh = await fsp.open(file, fsc.O_RDONLY | fsc.O_NOFOLLOW);
  try {
    const st = await fh.stat();
    const key = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
    const hit = parsedIndexes.get(file);
    if (hit && hit.key === key) {
      // Most recently used last: the first in the map is the one to drop.
      parsedIndexes.delete(file);
      parsedIndexes.set(file, hit);
      return hit.sizes;
    }
    const sizes = new Map<string, number>();
    for (const e of parseFileIndex(await fh.readFile(), KEPT_INDEX_LIMITS)) if (e.type === 'file') sizes.set(e.sha256, e.size);
    parsedIndexes.delete(file);
    if (sizes.size <= PARSED_ENTRIES_KEPT) {
      parsedIndexes.set(file, { key, sizes });
      let kept = 0;
      for (const v of parsedIndexes.values()) kept += v.sizes.size;
      for (const [f, v] of parsedIndexes) {
        if (parsedIndexes.size <= PARSED_INDEXES_KEPT && kept <= PARSED_ENTRIES_KEPT) break;
        parsedIndexes.delete(f);
        kept -= v.sizes.size;
      }
    }
    return sizes;
  } finally {
    await fh.close();
  }
}

// A handful: a rollout moves one or two releases of each of a few apps at a time. At most
// 300,000 objects in all (about 35 MB), whatever the indexes' sizes.
const PARSED_INDEXES_KEPT = 8;
const PARSED_ENTRIES_KEPT = 300_000;
const parsedIndexes = new Map<string, { key: string; sizes: ReadonlyMap<string, number> }>();

// Answers a pack request: every object asked must be a file of the release's index; the answer
// is the concatenation of the objects' compressed records (pack-records.ts), in the order asked,
// with its Content-Length. A node that loses a pack midway asks again for the objects it did not
// get whole (docs/design.md §20.5).
export async function sendPack(store: ControlStore, artifactsDir: string, names: { app: string; version: string }, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readBody(req, MAX_PACK_REQUEST_BYTES);
  if (!body.ok) return sendJson(res, errorAnswer(body.reason === 'too-large' ? 413 : 400, 'BAD_BODY', `a pack request is at most ${MAX_PACK_REQUEST_BYTES} bytes`));
  let shas: string[];
  try {
    shas = parsePackRequest(body.body);
  } catch (err) {
    return sendJson(res, errorAnswer(400, 'BAD_BODY', (err as Error).message));
  }
  const release = await store.read((tx) => tx.releases.get(names.app, names.version));
  const indexFile = indexPath(artifactsDir, names.app, names.version);
  const sizes = release ? await indexSizes(indexFile).catch((err: unknown) => err as Error) : null;
  if (sizes === null || (sizes instanceof Error && (sizes as NodeJS.ErrnoException).code === 'ENOENT')) return sendJson(res, errorAnswer(404, 'NOT_FOUND', `${names.app} ${names.version} has no file index here`));
  if (sizes instanceof Error) {
    log('index of %s %s unreadable: %s', names.app, names.version, sizes.message);
    return sendJson(res, errorAnswer(500, 'INTERNAL', `the file index of ${names.app} ${names.version} does not read`));
  }
  const unknown = shas.find((s) => !sizes.has(s));
  if (unknown) return sendJson(res, errorAnswer(400, 'BAD_BODY', `object ${unknown} is no file of ${names.app} ${names.version}`));
  const objects = serverObjectsDir(artifactsDir, names.app);
  const { c, old } = askedFor(req);
  const pack = packBytes(shas.map((s) => sizes.get(s) as number));
  let records: Array<{ file: string; bytes: number }>;
  try {
    records = [];
    for (const sha of shas) records.push(await ensureRecord(objects, sha, sizes.get(sha) as number, c));
  } catch (err) {
    log('pack of %s %s: %s', names.app, names.version, (err as Error).message);
    return sendJson(res, errorAnswer(404, 'NOT_FOUND', (err as Error).message));
  }
  const wire = records.reduce((n, r) => n + r.bytes, 0);
  // A helper from before §20.5 refuses an answer past gzipBound() of the pack, which many small
  // records (a gzip header and trailer each) may pass: it gets the pack gzipped as one stream.
  if (old && wire > gzipBound(pack)) return sendPackGzipped(names, objects, shas, sizes, pack, res);
  res.writeHead(200, { ...compressedHeaders(c, wire), 'x-steward-pack-bytes': String(pack) });
  try {
    for (const r of records) if (!(await writeFileTo(res, r.file))) return;
    res.end();
  } catch (err) {
    // The headers are out: the node sees a short pack and asks again for what it lacks.
    log('pack of %s %s cut: %s', names.app, names.version, (err as Error).message);
    res.destroy();
  }
}

// The pack as one gzip stream compressed as it is read (what every pack was before §20.5): its
// length on the wire is not known before, so the answer is chunked.
async function sendPackGzipped(names: { app: string; version: string }, objects: string, shas: readonly string[], sizes: ReadonlyMap<string, number>, pack: number, res: ServerResponse): Promise<void> {
  res.writeHead(200, { 'content-type': 'application/gzip', 'x-steward-pack-bytes': String(pack), vary: 'Accept-Encoding' });
  const gz = createGzip();
  gz.on('data', (c: Buffer) => {
    if (!res.write(c)) gz.pause();
  });
  res.on('drain', () => gz.resume());
  const put = async (b: Buffer): Promise<void> => {
    if (!gz.write(b)) await new Promise((r) => gz.once('drain', r));
  };
  try {
    for (const sha of shas) {
      const size = sizes.get(sha) as number;
      const fh = await openKept(path.join(objects, sha));
      if (!fh) throw new StewardError('NOT_FOUND', `object ${sha} of ${names.app} is missing on the server`);
      try {
        await put(packHeader(sha, size));
        if (size > 0) for await (const chunk of createReadStream('', { fd: fh, autoClose: false, end: size - 1, start: 0 }) as AsyncIterable<Buffer>) await put(chunk);
      } finally {
        await fh.close();
      }
    }
    await new Promise<void>((resolve) => gz.end(resolve));
    await new Promise((r) => (gz.readableEnded ? r(undefined) : gz.once('end', r)));
    res.end();
  } catch (err) {
    log('pack of %s %s cut: %s', names.app, names.version, (err as Error).message);
    res.destroy();
  }
}
