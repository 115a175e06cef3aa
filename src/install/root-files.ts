import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../core/errors.js';
import { readRegularFile, writeFileAtomic } from '../platform/fs-atomic.js';

// Files root writes by path for install: only in folders no one else can write (docs/design.md §2).

// Creates `dir` (0755) if missing and refuses it unless it is a root-owned folder that group and
// others cannot write: a folder someone else can write would let them swap what root writes.
export async function checkRootFolder(dir: string): Promise<void> {
  await fsp.mkdir(dir, { recursive: true, mode: 0o755 });
  const st = await fsp.lstat(dir);
  if (!st.isDirectory() || st.uid !== 0 || (st.mode & 0o022) !== 0) {
    throw new StewardError('ROOT_UNSAFE', `refusing to write into ${dir}: it must be a root-owned folder not writable by group or others (uid ${st.uid}, mode ${(st.mode & 0o7777).toString(8)})`);
  }
}

// Writes `bytes` to `target` with `mode` (atomic replace) unless it already holds exactly that.
export async function writeIfChanged(target: string, bytes: Buffer, mode: number): Promise<'created' | 'updated' | 'unchanged'> {
  await checkRootFolder(path.dirname(target));
  let have: Awaited<ReturnType<typeof readRegularFile>> = null;
  try {
    have = await readRegularFile(target, 1024 * 1024);
  } catch {
    have = null; // a symlink or a non-file in its place: replaced by the rename below
  }
  if (have && have.uid === 0 && have.mode === mode && have.bytes.equals(bytes)) return 'unchanged';
  const existed = have !== null || (await fsp.lstat(target).then(() => true, () => false));
  await writeFileAtomic(target, bytes, mode);
  return existed ? 'updated' : 'created';
}

// Removes `target` if it is there (the folder is fsynced by the next atomic write or left be).
export async function removeIfPresent(target: string): Promise<'removed' | 'absent'> {
  try {
    await fsp.rm(target, { recursive: true });
    return 'removed';
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'absent';
    throw err;
  }
}
