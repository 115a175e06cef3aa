import { promises as fsp, lstatSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { currentLink, versionDir, versionsDir, type HostPaths } from '../core/paths.js';
import { MARKER_FILE_NAME, MARKER_SCHEMA_VERSION, markerSchema, type Marker } from '../core/release-schemas.js';
import { isVersion } from '../core/version.js';
import { fsyncDir, readFileNoFollow } from '../platform/fs-atomic.js';
import { removeOwnTree } from '../platform/remove-tree.js';
import { cachedParse, keepParse } from '../platform/parse-cache.js';

export type CurrentLink =
  | { state: 'absent' }
  | { state: 'valid'; version: string }
  | { state: 'invalid'; target: string | null; why: string };

// What `current` points at: absent, a valid `versions/<ver>` with a valid marker, or invalid.
export async function readCurrent(paths: HostPaths, app: string): Promise<CurrentLink> {
  const link = currentLink(paths, app);
  let target: string;
  try {
    // Synchronous, as the marker read below: local metadata, asked on every status (each
    // heartbeat), where thread-pool round trips would wake an idle helper (issue 8, row 5).
    target = readlinkSync(link);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { state: 'absent' };
    if (code === 'EINVAL') return { state: 'invalid', target: null, why: `${link} is not a symlink` };
    throw err;
  }
  const m = /^versions\/([^/]+)$/.exec(target);
  if (!m || !isVersion(m[1])) return { state: 'invalid', target, why: `${link} -> ${target} is not versions/<version>` };
  const version = m[1] as string;
  const marker = await readMarker(paths, app, version);
  if (!marker) return { state: 'invalid', target, why: `${link} -> ${target} has no valid marker` };
  return { state: 'valid', version };
}

export type MarkerRead =
  | { state: 'valid'; marker: Marker }
  | { state: 'absent' }
  | { state: 'invalid'; why: string }
  | { state: 'newer'; schemaVersion: number };

// What the marker of versions/<ver> says. `newer` is a marker written by a newer steward
// (docs/design.md §10): never used by this one, and never taken for a broken tree and removed.
export async function inspectMarker(paths: HostPaths, app: string, version: string): Promise<MarkerRead> {
  const dir = versionDir(paths, app, version);
  try {
    const st = lstatSync(dir);
    if (!st.isDirectory()) return { state: 'invalid', why: `${dir} is not a folder` };
    const file = path.join(dir, MARKER_FILE_NAME);
    const raw = await readFileNoFollow(file, 64 * 1024);
    if (!raw) return { state: 'absent' };
    const text = raw.toString('utf8');
    const same = cachedParse<Marker>(markerSchema, file, text);
    if (same !== undefined) return { state: 'valid', marker: same };
    const json: unknown = JSON.parse(text);
    const sv = (json as { schemaVersion?: unknown } | null)?.schemaVersion;
    if (typeof sv === 'number' && sv > MARKER_SCHEMA_VERSION) return { state: 'newer', schemaVersion: sv };
    const parsed = markerSchema.safeParse(json);
    if (!parsed.success) return { state: 'invalid', why: 'the marker does not validate' };
    const marker = parsed.data;
    if (marker.version !== version) return { state: 'invalid', why: `the marker names version ${marker.version}` };
    // Kept only once every check passed: the same text of the same file passes them again.
    keepParse(markerSchema, file, text, marker);
    return { state: 'valid', marker };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { state: 'absent' };
    return { state: 'invalid', why: (err as Error).message };
  }
}

// The marker of versions/<ver> when it is valid for this steward, else null.
export async function readMarker(paths: HostPaths, app: string, version: string): Promise<Marker | null> {
  const m = await inspectMarker(paths, app, version);
  return m.state === 'valid' ? m.marker : null;
}

// The versions present under versions/ (valid version names only), sorted by name.
export async function listVersionDirs(paths: HostPaths, app: string): Promise<string[]> {
  try {
    return (await fsp.readdir(versionsDir(paths, app))).filter((n) => isVersion(n)).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

// Removes versions/<ver> whatever its shape: the marker first, made durable, then the tree,
// so a crash in between leaves a tree without a marker, which is never used and is cleaned at
// start. The marker's place may hold a folder or a symlink (an archive of an older steward put
// it there): it goes the same way, never followed.
export async function removeRelease(paths: HostPaths, app: string, version: string, afterMarker?: () => void): Promise<void> {
  const dir = versionDir(paths, app, version);
  const st = await fsp.lstat(dir).catch(() => null);
  if (!st) return;
  if (st.isDirectory()) {
    // The tree's top folder is read-only (0555): open it for the unlink, as its owner.
    await fsp.chmod(dir, 0o700);
    await removeOwnTree(path.join(dir, MARKER_FILE_NAME));
    await fsyncDir(dir);
  }
  afterMarker?.();
  await removeOwnTree(dir);
  await fsyncDir(versionsDir(paths, app));
}
