// The helper's TUF trust store (docs/design.md §21): `/var/lib/steward/trust/` under the root
// prefix, root's, 0700, holding `metadata/` (the trusted `root.json` and the metadata tuf-js keeps:
// `timestamp.json`, `snapshot.json`, `targets.json`, `app.<name>.json`). Every file is read under
// the trust rule (platform/trusted-file.ts): one another user could have written is not trusted.
// A change is made in a fresh folder beside `metadata/` and swapped in whole (swapIn), so a
// refresh that fails, or a crash, leaves the trusted state as it was.
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../../core/errors.js';
import type { HostPaths } from '../../core/paths.js';
import { ensureDir, fsyncDir } from '../../platform/fs-atomic.js';
import { readTrustedFile, trustRule, trustScope } from '../../platform/trusted-file.js';
import { SIGNED_AT_FIELD } from '../../core/trust/roles.js';

// The names tuf-js keeps in its metadata folder (no version prefix).
export const STORED_NAME_RE = /^(?:root|timestamp|snapshot|targets|app\.[a-z0-9][a-z0-9_-]{0,62})\.json$/;
// Each stored file is read up to this size (tuf-js's caps are below it: tuf-client.ts).
const MAX_STORED_BYTES = 8 * 1024 * 1024;

export type TrustScheme = 'keys' | 'tuf';

export function metadataDir(paths: HostPaths): string {
  return path.join(paths.trustDir, 'metadata');
}

// One change at a time per trust folder (a refresh, a set-root), and reads of a whole store
// never see half of one: the in-process queue of this helper (the helper holds helper.lock).
const queues = new Map<string, Promise<unknown>>();
export function withTrustLock<T>(paths: HostPaths, fn: () => Promise<T>): Promise<T> {
  const prev = queues.get(paths.trustDir) ?? Promise.resolve();
  const next = prev.then(fn, fn);
  queues.set(paths.trustDir, next.catch(() => {}));
  return next;
}

// A swap interrupted between its two renames left `metadata.old-*` and no `metadata/`: put it back.
async function restoreInterrupted(paths: HostPaths): Promise<void> {
  const dir = metadataDir(paths);
  try {
    await fsp.lstat(dir);
    return;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  let names: string[];
  try {
    names = await fsp.readdir(paths.trustDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  const old = names.filter((n) => n.startsWith('metadata.old-')).sort();
  if (old.length) await fsp.rename(path.join(paths.trustDir, old[old.length - 1] as string), dir);
}

// The stored metadata by name, each file read under the trust rule; empty when nothing is
// stored. A file that breaks the rule refuses the whole store (TRUST_INVALID): trust is never
// taken from a file another user could have written, nor quietly dropped.
// `pick`: only the files it names are read (an update reads its own app's delegation, not a
// fleet's every one).
export async function readStore(paths: HostPaths, pick?: (name: string) => boolean): Promise<Map<string, Buffer>> {
  await restoreInterrupted(paths);
  const dir = metadataDir(paths);
  const out = new Map<string, Buffer>();
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return out;
    throw err;
  }
  const scope = trustScope(dir, paths.root);
  for (const name of names.filter((n) => STORED_NAME_RE.test(n) && (!pick || pick(n))).sort()) {
    const r = await readTrustedFile(path.join(dir, name), scope, MAX_STORED_BYTES);
    if (r.state === 'untrusted') throw new StewardError('TRUST_INVALID', `the trust store is not trusted: ${r.why} (${trustRule(scope)})`);
    if (r.state === 'ok') out.set(name, r.bytes);
  }
  return out;
}

// `tuf` once a trusted root is stored, else `keys` (per-app release keys, docs/design.md §6).
export async function scheme(paths: HostPaths): Promise<TrustScheme> {
  return (await readStore(paths, (n) => n === 'root.json')).has('root.json') ? 'tuf' : 'keys';
}

// A fresh private folder beside metadata/ holding `files`: where tuf-js works on a copy.
export async function workCopy(paths: HostPaths, files: ReadonlyMap<string, Buffer>): Promise<string> {
  await ensureDir(path.dirname(paths.trustDir), 0o755);
  await ensureDir(paths.trustDir, 0o700);
  const dir = path.join(paths.trustDir, `work-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`);
  await fsp.mkdir(dir, { mode: 0o700 });
  for (const [name, bytes] of files) await fsp.writeFile(path.join(dir, name), bytes, { mode: 0o600 });
  return dir;
}

export async function removeWork(dir: string): Promise<void> {
  await fsp.rm(dir, { recursive: true, force: true }).catch(() => {});
}

// Makes the work folder the trusted metadata: its files made root's 0600 and synced, then two
// renames (the old folder aside, the new one in), then the old one removed.
export async function swapIn(paths: HostPaths, work: string): Promise<void> {
  for (const name of await fsp.readdir(work)) {
    const f = path.join(work, name);
    if (!STORED_NAME_RE.test(name)) {
      await fsp.rm(f, { recursive: true, force: true });
      continue;
    }
    await fsp.chmod(f, 0o600);
    const fh = await fsp.open(f, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  }
  await fsyncDir(work);
  await restoreInterrupted(paths);
  const dir = metadataDir(paths);
  const old = path.join(paths.trustDir, `metadata.old-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`);
  let hadOld = true;
  try {
    await fsp.rename(dir, old);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    hadOld = false;
  }
  await fsp.rename(work, dir);
  await fsyncDir(paths.trustDir);
  if (hadOld) await fsp.rm(old, { recursive: true, force: true });
  await removeLeftovers(paths);
}

// What a crash left beside metadata/: the old folders of swaps it interrupted after their second
// rename, and work folders of an hour ago (a refresh or an update's check holds one for seconds).
async function removeLeftovers(paths: HostPaths): Promise<void> {
  const hourAgo = Date.now() - 3_600_000;
  for (const name of await fsp.readdir(paths.trustDir).catch(() => [] as string[])) {
    const p = path.join(paths.trustDir, name);
    const old = name.startsWith('metadata.old-') || (name.startsWith('work-') && ((await fsp.lstat(p).catch(() => null))?.mtimeMs ?? Infinity) < hourAgo);
    if (old) await fsp.rm(p, { recursive: true, force: true }).catch(() => {});
  }
}

export interface TrustState {
  scheme: TrustScheme;
  rootVersion?: number;
  timestampVersion?: number;
  // The newest trusted timestamp's x-steward-signed-at (epoch ms), when it has one.
  timestampSignedAt?: number;
  // Whether that timestamp has expired by this host's clock.
  timestampExpired?: boolean;
}

// The `signed` of stored metadata, parsed as plain JSON: tuf-js verified it when it was stored,
// and `status` reads it without loading tuf-js (which the helper loads only when it verifies).
function signedOf(bytes: Buffer | undefined): Record<string, unknown> | null {
  if (!bytes) return null;
  try {
    const signed = (JSON.parse(bytes.toString('utf8')) as { signed?: unknown }).signed;
    return signed && typeof signed === 'object' ? (signed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

// What the stored metadata says, without verifying it again.
export function stateOf(files: ReadonlyMap<string, Buffer>, now: number): TrustState {
  const root = signedOf(files.get('root.json'));
  if (!root) return { scheme: files.has('root.json') ? 'tuf' : 'keys' };
  const out: TrustState = { scheme: 'tuf', ...(typeof root['version'] === 'number' ? { rootVersion: root['version'] } : {}) };
  const ts = signedOf(files.get('timestamp.json'));
  if (ts && typeof ts['version'] === 'number') {
    out.timestampVersion = ts['version'];
    const expires = typeof ts['expires'] === 'string' ? Date.parse(ts['expires']) : NaN;
    out.timestampExpired = !(expires > now);
    const at = ts[SIGNED_AT_FIELD];
    const ms = typeof at === 'string' ? Date.parse(at) : NaN;
    if (Number.isFinite(ms)) out.timestampSignedAt = ms;
  }
  return out;
}

export async function readTrustState(paths: HostPaths, now: number): Promise<TrustState> {
  return stateOf(await readStore(paths), now);
}
