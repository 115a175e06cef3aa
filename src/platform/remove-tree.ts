import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';

// A folder whose path is longer than this is moved up to the top of the tree being removed
// before it is emptied, so that no path handed to the kernel nears its 4,096-byte PATH_MAX
// (a name is at most 255 bytes, so a folder's entries stay below 2,048 + 2 * 256).
const SHALLOW_BYTES = 2048;

// Removes a tree only this process's user writes into (a release tree, a staging folder),
// whatever its shape: a file or a symlink (never followed) is unlinked; a folder is emptied
// after each folder in it is made writable by its owner (release trees are read-only, 0555,
// and even root cannot unlink in them without CAP_DAC_OVERRIDE) and every folder deeper than
// PATH_MAX allows is moved up. Folders are told apart by readdir's d_type, never by following
// a name. Never for a tree another user can write: folders are chmodded by path here.
export async function removeOwnTree(dir: string): Promise<void> {
  await removeAt(dir, true);
}

// Removes a tree that may hold read-only folders. Without root it is removeOwnTree; as root it
// chmods nothing (a tree another user can write, such as an app's state folder, must never be
// chmodded by path) and relies on root's CAP_DAC_OVERRIDE.
export async function removeTree(dir: string): Promise<void> {
  await removeAt(dir, process.getuid?.() !== 0);
}

async function removeAt(dir: string, chmodFolders: boolean): Promise<void> {
  let st;
  try {
    st = await fsp.lstat(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (st.isDirectory() && chmodFolders) await openFolders(dir);
  await fsp.rm(dir, { recursive: true, force: true });
}

// Makes every folder under `top` 0700 (owner-writable), moving any folder whose path is longer
// than SHALLOW_BYTES to `top/.deep-<random>` first; iterative, so depth costs no stack.
async function openFolders(top: string): Promise<void> {
  const stack = [top];
  while (stack.length) {
    let d = stack.pop() as string;
    // Why chmod: the owner of a read-only folder cannot unlink its entries (nor move it: its
    // `..` entry changes). Its path fits PATH_MAX: its parent's was made short before.
    await fsp.chmod(d, 0o700).catch(() => {});
    if (Buffer.byteLength(d) > SHALLOW_BYTES) {
      // Why rename: its parent and `top` are writable already (opened before they were read),
      // and both names fit PATH_MAX; the tree is being removed, so where its parts go is free.
      const up = path.join(top, `.deep-${randomBytes(6).toString('hex')}`);
      await fsp.rename(d, up);
      d = up;
    }
    const entries = await fsp.readdir(d, { withFileTypes: true }).catch(() => []);
    for (const e of entries) if (e.isDirectory()) stack.push(path.join(d, e.name));
  }
}
