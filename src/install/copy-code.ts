import { createHash, randomBytes } from 'node:crypto';
import { constants as fsc, promises as fsp } from 'node:fs';
import path from 'node:path';
import { fsyncDir, removeTree } from '../platform/fs-atomic.js';
import { syncFileSystem } from '../platform/exec.js';

// Copying steward's own code to its install location, as a whole tree swapped in with renames.
// Modes are normalized (folders 0755, files 0644 or 0755 when executable by anyone), every
// file root-owned, so a checkout with a loose umask installs no group-writable file.

interface Entry {
  rel: string;
  kind: 'd' | 'f' | 'l';
  mode: number;
  // sha256 of a file's bytes, or a symlink's target.
  value: string;
}

// The entries of `items` (paths relative to `root`) and their ancestors, sorted (parents first).
async function walk(root: string, items: string[]): Promise<Entry[]> {
  const out = new Map<string, Entry>();
  const visit = async (rel: string): Promise<void> => {
    const abs = path.join(root, rel);
    const st = await fsp.lstat(abs).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null;
      throw err;
    });
    if (!st) return;
    if (st.isDirectory()) {
      out.set(rel, { rel, kind: 'd', mode: 0o755, value: '' });
      for (const name of await fsp.readdir(abs)) await visit(path.join(rel, name));
    } else if (st.isFile()) {
      const hash = createHash('sha256').update(await fsp.readFile(abs)).digest('hex');
      out.set(rel, { rel, kind: 'f', mode: st.mode & 0o111 ? 0o755 : 0o644, value: hash });
    } else if (st.isSymbolicLink()) {
      out.set(rel, { rel, kind: 'l', mode: 0o777, value: await fsp.readlink(abs) });
    }
    // Sockets, FIFOs and devices are never part of steward's code: left behind.
  };
  for (const item of items) {
    const parts = item.split('/');
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join('/');
      out.set(dir, { rel: dir, kind: 'd', mode: 0o755, value: '' });
    }
    await visit(item);
  }
  return [...out.values()].sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
}

function digestOf(entries: Entry[]): string {
  const h = createHash('sha256');
  for (const e of entries) h.update(`${e.kind} ${e.mode.toString(8)} ${e.rel} ${e.value}\n`);
  return h.digest('hex');
}

// The digest of what is installed at `dest` (every entry), or null when nothing is.
async function installedDigest(dest: string): Promise<string | null> {
  let names: string[];
  try {
    names = await fsp.readdir(dest);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  return digestOf(await walk(dest, names));
}

// Copies `items` of `src` to `dest` unless `dest` holds exactly them already.
// Idempotent: returns 'unchanged' without writing anything when the trees match.
export async function installCode(src: string, items: string[], dest: string): Promise<'created' | 'updated' | 'unchanged'> {
  const entries = await walk(src, items);
  const want = digestOf(entries);
  const have = await installedDigest(dest);
  if (have === want) return 'unchanged';

  const parent = path.dirname(dest);
  const tmp = path.join(parent, `.${path.basename(dest)}.${randomBytes(6).toString('hex')}.tmp`);
  // 0700 while it fills: nobody else can look at or race a half-copied tree.
  await fsp.mkdir(tmp, { mode: 0o700 });
  try {
    for (const e of entries) {
      const from = path.join(src, e.rel);
      const to = path.join(tmp, e.rel);
      if (e.kind === 'd') {
        await fsp.mkdir(to, { mode: 0o755 });
        await fsp.chmod(to, 0o755);
      } else if (e.kind === 'f') {
        await fsp.copyFile(from, to, fsc.COPYFILE_EXCL);
        await fsp.chmod(to, e.mode);
      } else {
        await fsp.symlink(e.value, to);
      }
    }
    await fsp.chmod(tmp, 0o755);
    // Durable tree (docs/design.md §2): one syncfs, then the rename makes it visible.
    await syncFileSystem(tmp);
  } catch (err) {
    await removeTree(tmp).catch(() => {});
    throw err;
  }
  // Why two renames: rename(2) cannot replace a non-empty folder. The old tree moves aside first,
  // so the install location is missing only between the two renames, never half-written.
  let old: string | null = null;
  if (have !== null) {
    old = path.join(parent, `.${path.basename(dest)}.${randomBytes(6).toString('hex')}.old`);
    await fsp.rename(dest, old);
  }
  await fsp.rename(tmp, dest);
  await fsyncDir(parent);
  if (old) await removeTree(old);
  return have === null ? 'created' : 'updated';
}
