// The file index of each kept version, kept beside the app's objects (docs/design.md §20.5):
// `objects/indexes/<sha256 hex of the tree digest>.json` holds the canonical index of the tree
// whose digest names it. A stage whose index comes as a delta from that version decodes it
// against this file instead of walking the version's tree again (staged-index.ts: ~100 ms for
// node-red's 8,000 files, a fifth of a patch release's stage). A cache, never a trust: a delta
// decoded against a wrong file fails the signed integrity and the full index is fetched instead.
// Written without an fsync (a power cut costs the walk, nothing else); the files no valid
// version's marker names are removed after a prune and at start.
import { createHash, randomBytes } from 'node:crypto';
import fs, { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { HostPaths } from '../../core/paths.js';
import { objectsDir } from '../../core/paths.js';
import { FILE_INDEX_MAX_BYTES } from '../../core/file-index.js';
import { readFileNoFollow } from '../../platform/fs-atomic.js';
import { INDEXES_DIR } from '../../platform/object-store.js';
import { logger } from '../../platform/log.js';
import { listVersionDirs, readMarker } from '../release-store.js';

const log = logger('helper:objects');

function nameOf(treeDigest: string): string {
  return `${createHash('sha256').update(treeDigest).digest('hex')}.json`;
}

// Keeps `bytes` (made only when called: encoding a tarball's listing costs ~10 ms) as the index
// of the tree of `treeDigest`. Best effort: a failure is logged, and the next delta walks the tree.
export function keepIndex(objectsDir: string, treeDigest: string, bytes: () => Buffer): void {
  const dir = path.join(objectsDir, INDEXES_DIR);
  const tmp = path.join(dir, `.tmp-${randomBytes(6).toString('hex')}`);
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    fs.writeFileSync(tmp, bytes(), { mode: 0o600, flag: 'wx' });
    fs.renameSync(tmp, path.join(dir, nameOf(treeDigest)));
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    log('could not keep the file index of tree %s: %s', treeDigest, (err as Error).message);
  }
}

// The kept index of the tree of `treeDigest`, or null (none, not a regular file, too large).
export async function keptIndex(objectsDir: string, treeDigest: string): Promise<Buffer | null> {
  return readFileNoFollow(path.join(objectsDir, INDEXES_DIR, nameOf(treeDigest)), FILE_INDEX_MAX_BYTES).catch(() => null);
}

// Removes every kept index (and temporary file) that no valid version of `app` names by its
// marker's tree digest. Runs under the app's lock, after a prune and at start. Returns how many.
export async function collectKeptIndexes(paths: HostPaths, app: string): Promise<number> {
  const dir = path.join(objectsDir(paths, app), INDEXES_DIR);
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  if (names.length === 0) return 0;
  const keep = new Set<string>();
  for (const v of await listVersionDirs(paths, app)) {
    const m = await readMarker(paths, app, v);
    if (m) keep.add(nameOf(m.treeDigest));
  }
  let removed = 0;
  for (const name of names) {
    if (keep.has(name)) continue;
    await fsp.rm(path.join(dir, name), { recursive: true, force: true });
    removed++;
  }
  return removed;
}
