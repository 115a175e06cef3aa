// `GET /v1/artifacts/<app>/<version>.tgz`: the kept tarball of a catalog release.
import { constants as fsc, createReadStream, promises as fsp } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { pipeline } from 'node:stream';
import { isAppName, isVersion } from '../../core/names.js';
import { artifactPath } from '../catalog/artifact-path.js';
import type { ControlStore } from '../store/store.js';
import { sendJson } from './send.js';
import { errorAnswer } from './answer.js';

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

// Streams the tarball with its Content-Length, or answers 404.
export async function sendArtifact(store: ControlStore, artifactsDir: string, rest: string, res: ServerResponse, headOnly: boolean): Promise<void> {
  const names = parseArtifactPath(rest);
  const release = names ? await store.read((tx) => tx.releases.get(names.app, names.version)) : null;
  if (!names || !release || release.artifactPath === null) return sendJson(res, errorAnswer(404, 'NOT_FOUND', 'no such artifact'));
  let fh;
  try {
    // Why O_NOFOLLOW: the artifacts folder may be writable by others; never serve through a symlink.
    fh = await fsp.open(artifactPath(artifactsDir, names.app, names.version), fsc.O_RDONLY | fsc.O_NOFOLLOW);
  } catch {
    return sendJson(res, errorAnswer(404, 'NOT_FOUND', `the tarball of ${names.app} ${names.version} is missing on the server`));
  }
  const st = await fh.stat();
  if (!st.isFile()) {
    await fh.close();
    return sendJson(res, errorAnswer(404, 'NOT_FOUND', 'no such artifact'));
  }
  res.writeHead(200, { 'content-type': 'application/gzip', 'content-length': String(st.size) });
  if (headOnly) {
    await fh.close();
    res.end();
    return;
  }
  // pipeline, not pipe: when the client hangs up mid-download, pipe() leaves the file stream
  // paused and open (its handle closed only by the garbage collector, a descriptor held per
  // aborted download meanwhile); pipeline destroys it, which closes the file, and ends the
  // response on a read error.
  pipeline(createReadStream('', { fd: fh, autoClose: true }), res, () => undefined);
}
