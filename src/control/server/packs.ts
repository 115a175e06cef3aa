// `GET /v1/artifacts/<app>/<version>.index.json` and `POST /v1/artifacts/<app>/<version>.pack`
// (docs/design.md §20, docs/protocol.md): a release's file index, and a pack of the objects of it
// a node asks for, behind the same credential and download slots as the tarball (artifacts.ts).
import { constants as fsc, createReadStream, promises as fsp } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { createGzip, gzipSync } from 'node:zlib';
import { isAppName, isVersion } from '../../core/names.js';
import { parseFileIndex } from '../../core/file-index.js';
import { packBytes, packHeader, parsePackRequest, PACK_MAX_OBJECTS } from '../../core/object-pack.js';
import { StewardError } from '../../core/errors.js';
import { indexPath, serverObjectsDir } from '../catalog/file-index-of.js';
import type { ControlStore } from '../store/store.js';
import { logger } from '../../platform/log.js';
import { errorAnswer } from './answer.js';
import { readBody } from './read-body.js';
import { sendJson } from './send.js';

const log = logger('control:packs');

// The largest pack request: PACK_MAX_OBJECTS hex sha256s in JSON.
const MAX_PACK_REQUEST_BYTES = PACK_MAX_OBJECTS * 67 + 64;

// The app, version and kind an artifact path names beside the tarball, or null.
export function parseIndexPath(rest: string): { app: string; version: string; kind: 'index' | 'pack' } | null {
  const m = /^([^/]+)\/([^/]+)\.(index\.json|pack)$/.exec(rest);
  if (!m) return null;
  const [, app, version, ext] = m as unknown as [string, string, string, string];
  return isAppName(app) && isVersion(version) ? { app, version, kind: ext === 'pack' ? 'pack' : 'index' } : null;
}

async function openKept(file: string): Promise<fsp.FileHandle | null> {
  // Why O_NOFOLLOW: the artifacts folder may be writable by others; never serve through a symlink.
  return fsp.open(file, fsc.O_RDONLY | fsc.O_NOFOLLOW).catch(() => null);
}

// Sends the kept index of a catalog release, or 404.
export async function sendIndex(store: ControlStore, artifactsDir: string, names: { app: string; version: string }, res: ServerResponse, headOnly: boolean): Promise<void> {
  const release = await store.read((tx) => tx.releases.get(names.app, names.version));
  const fh = release ? await openKept(indexPath(artifactsDir, names.app, names.version)) : null;
  if (!fh) return sendJson(res, errorAnswer(404, 'NOT_FOUND', `${names.app} ${names.version} has no file index here`));
  let body: Buffer;
  try {
    body = gzipSync(await fh.readFile());
  } finally {
    await fh.close();
  }
  // gzip-compressed: the signed integrity and size are the uncompressed index's (docs/design.md §20).
  res.writeHead(200, { 'content-type': 'application/gzip', 'content-length': String(body.length), 'cache-control': 'public, max-age=31536000, immutable' });
  res.end(headOnly ? undefined : body);
}

// Answers a pack request: every object asked must be a file of the release's index; the answer
// is exactly packBytes() long (Content-Length), the records in the order asked. No Range: a
// node that loses a pack midway falls back to the tarball, which resumes.
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
  const raw = release ? await fsp.readFile(indexFile).catch(() => null) : null;
  if (!raw) return sendJson(res, errorAnswer(404, 'NOT_FOUND', `${names.app} ${names.version} has no file index here`));
  let sizes: Map<string, number>;
  try {
    sizes = new Map();
    for (const e of parseFileIndex(raw, { maxEntries: 1_000_000, maxPathBytes: 4096, maxDepth: 1024, maxTotalBytes: Number.MAX_SAFE_INTEGER })) if (e.type === 'file') sizes.set(e.sha256, e.size);
  } catch (err) {
    log('index of %s %s unreadable: %s', names.app, names.version, (err as Error).message);
    return sendJson(res, errorAnswer(500, 'INTERNAL', `the file index of ${names.app} ${names.version} does not read`));
  }
  const unknown = shas.find((s) => !sizes.has(s));
  if (unknown) return sendJson(res, errorAnswer(400, 'BAD_BODY', `object ${unknown} is no file of ${names.app} ${names.version}`));
  const objects = serverObjectsDir(artifactsDir, names.app);
  // The pack (exactly packBytes() of it) gzip-compressed as it is read: its length on the wire is
  // not known before, so the answer is chunked.
  res.writeHead(200, { 'content-type': 'application/gzip', 'x-steward-pack-bytes': String(packBytes(shas.map((s) => sizes.get(s) as number))) });
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
    // The headers are out: the node sees a short pack, refuses it and fetches the tarball.
    log('pack of %s %s cut: %s', names.app, names.version, (err as Error).message);
    res.destroy();
  }
}
