// The control plane's objects of an app (docs/design.md §20.4): the files a pack sends, kept by
// sha256 under `<artifacts>/<app>/objects/` (with whatever a name adds after the 64 hex digits),
// are collected when no kept index of the app lists them any more, after `release remove`.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { parseFileIndex } from '../../core/file-index.js';
import { logger } from '../../platform/log.js';
import { KEPT_INDEX_LIMITS, serverObjectsDir } from './file-index-of.js';

const log = logger('control:objects');

// An object newer than this is left: another instance's `release add` may have written (or
// found and touched) it and not yet written the index that lists it.
export const OBJECT_GRACE_MS = 60 * 60 * 1000;
const INDEX_RE = /\.index\.json$/;
const OBJECT_FILE_RE = /^([0-9a-f]{64})(?:$|\.)/;

// Removes the app's objects that no `<version>.index.json` beside them lists and that are older
// than OBJECT_GRACE_MS; returns how many files and bytes went. An index that does not read stops
// the collection (nothing is removed on a guess).
export async function collectServerObjects(artifactsDir: string, app: string, now = Date.now()): Promise<{ removed: number; bytes: number }> {
  const appDir = path.dirname(serverObjectsDir(artifactsDir, app));
  const objects = serverObjectsDir(artifactsDir, app);
  const names = await fsp.readdir(appDir).catch(() => [] as string[]);
  const listed = new Set<string>();
  for (const name of names.filter((n) => INDEX_RE.test(n))) {
    // Gone meanwhile (another instance removed that release): its objects need not stay.
    const raw = await fsp.readFile(path.join(appDir, name)).catch(() => null);
    if (!raw) continue;
    let entries;
    try {
      entries = parseFileIndex(raw, KEPT_INDEX_LIMITS);
    } catch (err) {
      log('objects of %s not collected: %s does not read: %s', app, name, (err as Error).message);
      return { removed: 0, bytes: 0 };
    }
    for (const e of entries) if (e.type === 'file') listed.add(e.sha256);
  }
  let removed = 0;
  let bytes = 0;
  for (const name of await fsp.readdir(objects).catch(() => [] as string[])) {
    const m = OBJECT_FILE_RE.exec(name);
    if (m && listed.has(m[1] as string)) continue;
    const file = path.join(objects, name);
    const st = await fsp.lstat(file).catch(() => null);
    if (!st || !st.isFile() || now - st.mtimeMs < OBJECT_GRACE_MS) continue;
    await fsp.rm(file, { force: true });
    removed++;
    bytes += st.size;
  }
  if (removed > 0) log('objects collected app=%s removed=%d bytes=%d', app, removed, bytes);
  return { removed, bytes };
}
