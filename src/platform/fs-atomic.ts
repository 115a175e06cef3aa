import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, constants as fsc, fchmodSync, fchownSync, fstatSync, fsync, lstatSync, mkdirSync, openSync, promises as fsp, readSync, renameSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { IoStep } from './faults.js';

// Why the small state files are written and read with synchronous calls except fsync: each
// async call is a round trip through libuv's thread pool (two context switches and an event
// loop turn), and an activation makes about a hundred of them. open, write, close and rename
// of a file of a few KB only touch the page cache and take microseconds; fsync waits for the
// disk and is the one call that stays off the event loop.
const fsyncFd = promisify(fsync);

// Fsyncs a directory so that a rename, create or unlink inside it is durable.
// A failed fsync is never retried (the page cache may have dropped the error): it throws.
export async function fsyncDir(dir: string): Promise<void> {
  const fd = openSync(dir, fsc.O_RDONLY | fsc.O_DIRECTORY);
  try {
    await fsyncFd(fd);
  } finally {
    closeSync(fd);
  }
}

function tmpName(target: string, kind: string): string {
  return path.join(path.dirname(target), `.${path.basename(target)}.${randomBytes(6).toString('hex')}.${kind}`);
}

// Atomic file replace (docs/design.md §2): a fresh temp file opened with O_EXCL|O_NOFOLLOW, its mode
// (and optionally its group) set through the fd so no umask or race on the name can change
// them, written, fsynced, renamed over the target, then the folder fsynced. `step` is the
// fault seam's hook, called before each step (it throws to make that step fail).
export async function writeFileAtomic(
  target: string,
  data: string | Uint8Array,
  mode = 0o600,
  opts: { gid?: number | null; step?: IoStep } = {},
): Promise<void> {
  const prepared = await prepareFileAtomic(target, data, mode, opts);
  await prepared.commit();
}

// The two halves of the atomic replace, for two files that must become durable in order (A
// before B): B's temp file can be written and fsynced while A's rename and folder fsync run,
// and B is committed after A. What a crash can leave is the same as with two writeFileAtomic
// one after the other, plus at most a temp file nobody reads; only the waits overlap.
export interface PreparedFile {
  // Renames the temp file over the target and fsyncs the folder; call at most once.
  commit(): Promise<void>;
  // Removes the temp file instead (the write it was for is not to happen).
  abandon(): void;
}

// The first half: the temp file is written and fsynced (and closed); nothing visible changed.
export async function prepareFileAtomic(
  target: string,
  data: string | Uint8Array,
  mode = 0o600,
  opts: { gid?: number | null; step?: IoStep } = {},
): Promise<PreparedFile> {
  const step = opts.step ?? (() => {});
  const tmp = tmpName(target, 'tmp');
  const fd = openSync(tmp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, mode);
  let ok = false;
  try {
    // fchown/fchmod on the fd, never by path: the name could be swapped under us.
    if (opts.gid !== undefined && opts.gid !== null) fchownSync(fd, process.geteuid?.() ?? 0, opts.gid);
    fchmodSync(fd, mode);
    step('write');
    writeAll(fd, typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
    // The data must be on disk before the rename can make it visible under the real name.
    step('fsync');
    await fsyncFd(fd);
    ok = true;
  } finally {
    try {
      closeSync(fd);
    } catch (err) {
      // A close that fails after a good fsync still fails the write.
      if (ok) {
        removeTemp(tmp);
        throw err;
      }
    }
    if (!ok) removeTemp(tmp);
  }
  let done = false;
  return {
    async commit() {
      if (done) throw new Error(`${target}: committed twice`);
      done = true;
      try {
        step('rename');
        renameSync(tmp, target);
      } catch (err) {
        removeTemp(tmp);
        throw err;
      }
      step('fsyncdir');
      await fsyncDir(path.dirname(target));
    },
    abandon() {
      if (done) return;
      done = true;
      removeTemp(tmp);
    },
  };
}

// Why: a failed write leaves no stray temp file behind in a root-owned folder.
function removeTemp(tmp: string): void {
  try {
    rmSync(tmp, { force: true });
  } catch {
    /* the write's own error matters more */
  }
}

// writeSync may write less than asked (a signal, a nearly full disk): loop until all is written.
export function writeAll(fd: number, bytes: Uint8Array): void {
  let off = 0;
  while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
}

// Makes two prepared files durable in order, A before B: B's temp file is written and fsynced
// while A's rename and folder fsync run, and B is renamed only after them. A failure leaves what
// the two writes one after the other would: A failed, nothing changed (B's temp is removed); B
// failed, A is written. `between` runs once A is durable, before B is renamed.
export async function commitInOrder(a: Promise<PreparedFile>, b: Promise<PreparedFile>, between?: () => void): Promise<void> {
  const [first, second] = await Promise.allSettled([a, b]);
  const dropSecond = () => {
    if (second.status === 'fulfilled') second.value.abandon();
  };
  if (first.status === 'rejected') {
    dropSecond();
    throw first.reason;
  }
  try {
    await first.value.commit();
  } catch (err) {
    dropSecond();
    throw err;
  }
  between?.();
  if (second.status === 'rejected') throw second.reason;
  await second.value.commit();
}

// Writes JSON with the atomic file replace, with a trailing newline.
export async function writeJsonAtomic(target: string, value: unknown, mode = 0o600, step?: IoStep): Promise<void> {
  await (await prepareJsonAtomic(target, value, mode, step)).commit();
}

// The first half of writeJsonAtomic (see prepareFileAtomic).
export async function prepareJsonAtomic(target: string, value: unknown, mode = 0o600, step?: IoStep): Promise<PreparedFile> {
  return prepareFileAtomic(target, JSON.stringify(value, null, 2) + '\n', mode, step ? { step } : {});
}

// Atomic symlink swap (docs/design.md §2): symlink to a temp name, rename over `link`, fsync the folder.
// Never unlink-then-create: a crash between the two would leave no link at all.
export async function swapSymlink(link: string, target: string): Promise<void> {
  const tmp = tmpName(link, 'lnk');
  await fsp.symlink(target, tmp);
  try {
    await fsp.rename(tmp, link);
  } catch (err) {
    await fsp.rm(tmp, { force: true }).catch(() => {});
    throw err;
  }
  await fsyncDir(path.dirname(link));
}

// Creates a folder (and its parents) if missing and sets its mode exactly.
// Refuses a symlink or non-folder in its place rather than following it.
export async function ensureDir(dir: string, mode: number): Promise<void> {
  // Synchronous: metadata only, microseconds (see the top of this file).
  mkdirSync(dir, { recursive: true, mode });
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw Object.assign(new Error(`${dir} is not a folder`), { code: 'ENOTDIR' });
  if ((st.mode & 0o7777) !== mode) chmodSync(dir, mode);
}

// Tree removal lives in remove-tree.ts; re-exported for the callers that import it from here.
export { removeTree } from './remove-tree.js';

// Opens `file` without following a symlink (and without blocking on a FIFO) and returns its
// bytes and fstat, or null when it does not exist. Anything other than a regular file of at
// most `maxBytes` throws.
export async function readRegularFile(file: string, maxBytes: number): Promise<{ bytes: Buffer; uid: number; mode: number } | null> {
  let fd;
  try {
    fd = openSync(file, fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    if (code === 'ELOOP') throw Object.assign(new Error(`${file} is a symlink`), { code });
    throw err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw Object.assign(new Error(`${file} is not a regular file`), { code: 'EINVAL' });
    if (st.size > maxBytes) throw Object.assign(new Error(`${file} is larger than ${maxBytes} bytes`), { code: 'EFBIG' });
    // Read to the end, whatever fstat said (the file may have grown), but never past maxBytes.
    let buf = Buffer.allocUnsafe(Math.min(maxBytes + 1, Math.max(st.size + 1, 4096)));
    let len = 0;
    for (;;) {
      if (len === buf.length) {
        if (len > maxBytes) throw Object.assign(new Error(`${file} is larger than ${maxBytes} bytes`), { code: 'EFBIG' });
        const bigger = Buffer.allocUnsafe(Math.min(maxBytes + 1, buf.length * 2));
        buf.copy(bigger, 0, 0, len);
        buf = bigger;
      }
      const n = readSync(fd, buf, len, buf.length - len, null);
      if (n === 0) break;
      len += n;
    }
    if (len > maxBytes) throw Object.assign(new Error(`${file} is larger than ${maxBytes} bytes`), { code: 'EFBIG' });
    return { bytes: buf.subarray(0, len), uid: st.uid, mode: st.mode & 0o7777 };
  } finally {
    closeSync(fd);
  }
}

// The bytes of a regular file read through O_NOFOLLOW; null when it does not exist.
export async function readFileNoFollow(file: string, maxBytes: number): Promise<Buffer | null> {
  return (await readRegularFile(file, maxBytes))?.bytes ?? null;
}
