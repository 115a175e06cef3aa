import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { HostPaths } from '../core/paths.js';
import { objectsDir, stagingDir } from '../core/paths.js';
import { collectGarbage } from '../platform/object-store.js';
import { removeOwnTree } from '../platform/remove-tree.js';
import { logger } from '../platform/log.js';
import { inspectMarker, listVersionDirs, readCurrent, removeRelease } from './release-store.js';
import { collectKeptIndexes } from './stage/kept-indexes.js';

const log = logger('helper:start');

// At start, under helper.lock (docs/design.md §4): remove `.staging/*` (no stage survives a
// restart) and every versions/<v> without a valid marker (a stage that died between
// rename and marker). The tree `current` points at is never removed here: an invalid
// current is recovery's business, not the cleaner's. One tree that cannot be removed (an
// I/O error) is logged and left for the next start; the others are still removed.
export async function cleanStaleStaging(paths: HostPaths, app: string): Promise<string[]> {
  const removed: string[] = [];
  const attempt = async (what: string, remove: () => Promise<void>): Promise<void> => {
    try {
      await remove();
      removed.push(what);
    } catch (err) {
      log('could not remove app=%s %s: %s', app, what, (err as Error).message);
    }
  };
  const staging = stagingDir(paths, app);
  for (const name of await fsp.readdir(staging).catch(() => [] as string[])) {
    await attempt(path.join(staging, name), () => removeOwnTree(path.join(staging, name)));
  }
  const cur = await readCurrent(paths, app).catch(() => null);
  const curTarget = cur && cur.state === 'invalid' ? cur.target : cur && cur.state === 'valid' ? `versions/${cur.version}` : null;
  for (const v of await listVersionDirs(paths, app)) {
    if (curTarget === `versions/${v}`) continue;
    const m = await inspectMarker(paths, app, v);
    // A tree staged by a newer steward is not broken: leave it for that steward.
    if (m.state === 'valid' || m.state === 'newer') continue;
    await attempt(v, () => removeRelease(paths, app, v));
  }
  // Objects (docs/design.md §20) that no kept tree links any more: a stage that died after filing
  // objects and before its tree reached versions/, or a prune cut short; and any temporary name.
  try {
    const gc = await collectGarbage(objectsDir(paths, app));
    if (gc.removed.length > 0) log('objects collected app=%s removed=%d bytes=%d', app, gc.removed.length, gc.bytes);
    await collectKeptIndexes(paths, app);
  } catch (err) {
    log('could not collect objects app=%s: %s', app, (err as Error).message);
  }
  if (removed.length) log('cleaned app=%s removed=%s', app, removed.join(','));
  return removed;
}
