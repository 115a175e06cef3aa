import { createHash, randomBytes } from 'node:crypto';
import fs, { promises as fsp } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../core/errors.js';
import { TimeSlicer } from './time-slice.js';
import type { ObjectStat } from './stat-ahead.js';

// File objects by content (docs/design.md §20): `objects/<2 hex>/<sha256 hex>-<r|x>`, one inode per
// distinct (bytes, executable bit), root-owned and read-only (0444, or 0555 for `x`). A release
// tree's regular files are hardlinks to them, so a file shared by versions is on disk once and an
// object is in no kept version exactly when its link count is 1.

export const OBJECT_NAME_RE = /^([0-9a-f]{64})-([rx])$/;
// The record of checked objects (object-checks.ts) and the folder of kept file indexes
// (helper/stage/kept-indexes.ts): the two names in objects/ that are no shard.
export const CHECKED_FILE = 'checked';
export const INDEXES_DIR = 'indexes';
const TMP_PREFIX = '.tmp-';

// The name of the object of `sha256` (hex) with the tree mode `mode` (0444 or 0555).
export function objectName(sha256: string, mode: number): string {
  return `${sha256}-${(mode & 0o111) !== 0 ? 'x' : 'r'}`;
}

// Where the object `name` lives under `objectsDir`.
export function objectPath(objectsDir: string, name: string): string {
  // Joined, not path.join: a stage calls this per file of the tree, and the parts need no normalizing.
  return `${objectsDir}/${name.slice(0, 2)}/${name}`;
}

// The mode an object of `name` has.
export function objectMode(name: string): number {
  return name.endsWith('-x') ? 0o555 : 0o444;
}

// The sha256 hex of a file's bytes, read through an fd opened O_NOFOLLOW.
export async function hashFile(file: string): Promise<string> {
  const fh = await fsp.open(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  try {
    const hash = createHash('sha256');
    const buf = Buffer.allocUnsafe(256 * 1024);
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      hash.update(buf.subarray(0, bytesRead));
    }
    return hash.digest('hex');
  } finally {
    await fh.close();
  }
}

export type ObjectCheck = { ok: true; size: number; ino: number } | { ok: false; why: string };

// Whether this process runs as root, asked once: a stage checks thousands of objects, and the
// helper never changes its user.
let asRoot: boolean | undefined;

// What an object's lstat says against its name, or null: a regular file of its name's mode, owned
// by root when the helper is root, of the expected size.
function statProblem(st: ObjectStat, name: string, expectSize: number | undefined): string | null {
  if (!st.isFile()) return 'is not a regular file';
  const mode = st.mode & 0o7777;
  if (mode !== objectMode(name)) return `has mode ${mode.toString(8)}, not ${objectMode(name).toString(8)}`;
  asRoot ??= process.getuid?.() === 0;
  if (asRoot && (st.uid !== 0 || st.gid !== 0)) return `is owned by ${st.uid}:${st.gid}, not root`;
  if (expectSize !== undefined && st.size !== expectSize) return `is ${st.size} bytes, not ${expectSize}`;
  return null;
}

// Whether the object at `file` is what its name says: a regular file (never followed), the mode of
// its name, owned by root when we are root, and bytes whose sha256 is the name's. Every object a
// stage reuses passes this first: an object changed on disk is never trusted (§20).
export async function checkObject(file: string, name: string, expectSize?: number): Promise<ObjectCheck> {
  const m = OBJECT_NAME_RE.exec(name);
  if (!m) return { ok: false, why: 'is not an object name' };
  let st: fs.Stats;
  try {
    st = await fsp.lstat(file);
  } catch (err) {
    return { ok: false, why: (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'is missing' : (err as Error).message };
  }
  const why = statProblem(st, name, expectSize);
  if (why) return { ok: false, why };
  if ((await hashFile(file)) !== m[1]) return { ok: false, why: 'holds bytes whose sha256 is not its name' };
  return { ok: true, size: st.size, ino: st.ino };
}

// checkObject without the thread pool: the stage's hot loop over thousands of small objects,
// where a round trip per lstat and read cost more than the work (bench/objects.ts). Files above
// 4 MiB are read in chunks all the same. `unchanged`: whether the helper's record of checked
// objects (object-checks.ts) says this inode has not changed since it was checked; then its
// bytes are not read again (its lstat is still held to its name). `taken`: the file's lstat,
// taken just before by the caller (stat-ahead.ts), used instead of one here.
export function checkObjectSync(file: string, name: string, expectSize?: number, unchanged?: (st: ObjectStat) => boolean, taken?: ObjectStat): ObjectCheck {
  const m = OBJECT_NAME_RE.exec(name);
  if (!m) return { ok: false, why: 'is not an object name' };
  let st: ObjectStat;
  try {
    st = taken ?? fs.lstatSync(file);
  } catch (err) {
    return { ok: false, why: (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'is missing' : (err as Error).message };
  }
  const why = statProblem(st, name, expectSize);
  if (why) return { ok: false, why };
  const { size, ino } = st;
  if (unchanged?.(st)) return { ok: true, size, ino };
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  const hash = createHash('sha256');
  try {
    const buf = Buffer.allocUnsafe(Math.min(Math.max(size, 1), 4 * 1024 * 1024));
    for (;;) {
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      hash.update(buf.subarray(0, n));
    }
  } finally {
    fs.closeSync(fd);
  }
  if (hash.digest('hex') !== m[1]) return { ok: false, why: 'holds bytes whose sha256 is not its name' };
  return { ok: true, size, ino };
}

// Whether the object `name` is present (not checked: linkObjectSync checks what it links).
export function hasObjectSync(objectsDir: string, name: string): boolean {
  return objectStatSync(objectsDir, name) !== undefined;
}

// The lstat of the object `name` when it is a regular file (not checked), or undefined.
export function objectStatSync(objectsDir: string, name: string): fs.Stats | undefined {
  try {
    const st = fs.lstatSync(objectPath(objectsDir, name), { throwIfNoEntry: false });
    return st?.isFile() ? st : undefined;
  } catch {
    return undefined;
  }
}

// The names under each shard of `objectsDir` (a readdir each, no lstat): which objects a stage
// need not fetch. Not checked: linkObjectSync checks each object it links. Empty when there is no
// `objectsDir` yet; a shard that is no folder holds no object. Synchronous readdirs, with a turn
// of the event loop every couple of ms: a stage reads them while its index comes, and 257 of
// them in one go (7-12 ms) held back the very request they were to overlap.
export async function objectNames(objectsDir: string): Promise<Set<string>> {
  const slicer = new TimeSlicer();
  const names = new Set<string>();
  let shards: string[];
  try {
    shards = fs.readdirSync(objectsDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return names;
    throw err;
  }
  for (const shard of shards) {
    if (!/^[0-9a-f]{2}$/.test(shard)) continue;
    let inShard: string[];
    try {
      inShard = fs.readdirSync(`${objectsDir}/${shard}`);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOTDIR' || (err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    for (const name of inShard) names.add(name);
    if (slicer.due()) await slicer.pass();
  }
  return names;
}

// Links the object `name` at `dest` (which must not exist) after checking it (unless the caller
// made or checked it moments ago, `checked`; `unchanged` and `taken` as checkObjectSync takes them).
// Throws INTEGRITY_MISMATCH (and removes the object) when it does not check out. Returns the
// inode checked, or null when `checked`. Synchronous: a stage links thousands of small files,
// where thread-pool round trips cost more than the work.
export function linkObjectSync(objectsDir: string, name: string, dest: string, size: number, checked = false, unchanged?: (st: ObjectStat) => boolean, taken?: ObjectStat): number | null {
  const target = objectPath(objectsDir, name);
  const check: ObjectCheck | null = checked ? null : checkObjectSync(target, name, size, unchanged, taken);
  if (check && !check.ok) {
    try {
      fs.unlinkSync(target);
    } catch {
      // already gone
    }
    throw new StewardError('INTEGRITY_MISMATCH', `object ${name} ${check.why}; it was removed`);
  }
  fs.linkSync(target, dest);
  return check ? check.ino : null;
}

// Runs `op`, a link or rename that puts a name at `target` (an object's path); the shard folder is
// made the first time `op` finds it missing (0700: only root reads objects by path; trees reach
// them by their own names).
function intoShard(target: string, op: () => void): void {
  try {
    op();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 });
    op();
  }
}

// Makes `file` (a regular file of a staged tree whose bytes were hashed as they were written, and
// made durable since) the object `name`, by a second name: one link, atomic, so that an object
// name only ever holds a complete file. When the object exists and
// checks out, `file` is replaced by a link to it instead (the tree then shares the object's inode).
// An existing object that does not check out is removed first and made again from `file`.
// Idempotent: a second call for the same file finds the object is its own inode.
// `checked`: the caller checked (or made) this object moments ago, under the same lock.
// Synchronous: a stage calls it for each of thousands of small files, where thread-pool round
// trips cost more than the work (its caller yields between batches).
export function fileAsObject(objectsDir: string, file: string, name: string, size: number, checked = false, unchanged?: (st: ObjectStat) => boolean): { reused: boolean; replaced?: string } {
  const target = objectPath(objectsDir, name);
  // Why throwIfNoEntry: most objects of a first stage are new, and an exception per file costs.
  const st = fs.lstatSync(target, { throwIfNoEntry: false });
  let replaced: string | undefined;
  if (st) {
    const own = fs.lstatSync(file);
    if (st.ino === own.ino && st.dev === own.dev) return { reused: false };
    const check: ObjectCheck = checked ? { ok: true, size, ino: st.ino } : checkObjectSync(target, name, size, unchanged);
    if (check.ok) {
      // Why a temporary name and a rename: the tree's name always holds a whole file.
      const tmp = path.join(path.dirname(file), `${TMP_PREFIX}${randomBytes(6).toString('hex')}`);
      fs.linkSync(target, tmp);
      fs.renameSync(tmp, file);
      return { reused: true };
    }
    // Why unlink: an object that changed on disk must not be linked into any new tree. The trees
    // that hold it keep their own names (`agentctl verify` names them).
    replaced = check.why;
    fs.unlinkSync(target);
  }
  // A link is atomic: the object's name appears holding the file's inode, whose bytes are durable
  // (the caller's syncfs), or not at all.
  intoShard(target, () => fs.linkSync(file, target));
  return replaced ? { reused: false, replaced } : { reused: false };
}

// Moves a verified, durable file into place as the object `name` (a fresh object from a pack).
// An object already there under that name is replaced by this inode, the same verified bytes
// (the trees that link the old one keep it). Synchronous: a stage adopts a pack's objects by the
// hundred, where thread-pool round trips cost more than the renames.
export function adoptVerifiedFileSync(objectsDir: string, file: string, name: string): void {
  const target = objectPath(objectsDir, name);
  intoShard(target, () => fs.renameSync(file, target));
}

// Every object name under `objectsDir` with its link count, and the temporary files a crash left.
export async function listObjects(objectsDir: string): Promise<{ objects: Array<{ name: string; file: string; nlink: number; size: number }>; strays: string[] }> {
  const objects: Array<{ name: string; file: string; nlink: number; size: number }> = [];
  const strays: string[] = [];
  const shards = await fsp.readdir(objectsDir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [] as string[];
    throw err;
  });
  for (const shard of shards.sort()) {
    const dir = path.join(objectsDir, shard);
    if (shard === CHECKED_FILE || shard === INDEXES_DIR) continue;
    if (!/^[0-9a-f]{2}$/.test(shard)) {
      strays.push(dir);
      continue;
    }
    for (const name of (await fsp.readdir(dir)).sort()) {
      const file = path.join(dir, name);
      if (!OBJECT_NAME_RE.test(name) || !name.startsWith(shard)) {
        strays.push(file);
        continue;
      }
      const st = await fsp.lstat(file);
      objects.push({ name, file, nlink: st.nlink, size: st.size });
    }
  }
  return { objects, strays };
}

// Removes every object no tree links any more (link count 1) and every temporary file a crash
// left, then makes the removals durable. Runs under the app's lock, after a prune or at start,
// when no stage of the app is running: a stage's own links would otherwise look unused.
// Returns the names removed and the bytes freed.
export async function collectGarbage(objectsDir: string): Promise<{ removed: string[]; bytes: number }> {
  const { objects, strays } = await listObjects(objectsDir);
  const removed: string[] = [];
  let bytes = 0;
  const touched = new Set<string>();
  for (const s of strays) {
    // Why: a temporary name is a crash's leftover (or not ours); no tree links it by that name.
    await fsp.rm(s, { recursive: true, force: true });
    touched.add(path.dirname(s));
  }
  for (const o of objects) {
    if (o.nlink > 1) continue;
    // Why unlink: link count 1 means no kept tree holds these bytes (trees link, never copy).
    await fsp.unlink(o.file);
    removed.push(o.name);
    bytes += o.size;
    touched.add(path.dirname(o.file));
  }
  for (const dir of touched) {
    const fd = await fsp.open(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY).catch(() => null);
    if (!fd) continue;
    try {
      await fd.sync();
    } finally {
      await fd.close();
    }
  }
  return { removed, bytes };
}
