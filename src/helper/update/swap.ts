import { randomBytes } from 'node:crypto';
import { promises as fsp, renameSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { appDir, currentLink, type HostPaths } from '../../core/paths.js';
import { fsyncDir } from '../../platform/fs-atomic.js';
import type { Faults } from '../../platform/faults.js';

// Points `current` at versions/<version> with the atomic symlink swap (docs/design.md §2):
// symlink to a temp name, rename over `current`, fsync the app folder. Never unlink-then-create.
export async function pointCurrent(paths: HostPaths, app: string, version: string, faults: Faults, direction: 'forward' | 'back'): Promise<void> {
  const dir = appDir(paths, app);
  const tmp = path.join(dir, `.current.${randomBytes(6).toString('hex')}`);
  faults.io('current', 'write');
  // symlink and rename are synchronous: they only touch the folder in the page cache (see
  // platform/fs-atomic.ts); the folder's fsync below is the call that waits for the disk.
  symlinkSync(`versions/${version}`, tmp);
  faults.hit(direction === 'forward' ? 'after-symlink-before-rename' : 'during-swap-back');
  try {
    faults.io('current', 'rename');
    renameSync(tmp, currentLink(paths, app));
  } catch (err) {
    try {
      rmSync(tmp, { force: true });
    } catch {
      /* the rename's error matters more */
    }
    throw err;
  }
  if (direction === 'forward') faults.hit('after-rename-before-fsync');
  // The rename is only durable once the folder holding `current` is fsynced.
  faults.io('current', 'fsyncdir');
  await fsyncDir(dir);
}

// Removes `current` (a failed first install), durably.
export async function removeCurrent(paths: HostPaths, app: string): Promise<void> {
  await fsp.rm(currentLink(paths, app), { force: true });
  await fsyncDir(appDir(paths, app));
}

// Removes temp links a crash left between symlink() and rename().
export async function removeStrayCurrentLinks(paths: HostPaths, app: string): Promise<void> {
  const dir = appDir(paths, app);
  for (const name of await fsp.readdir(dir).catch(() => [] as string[])) {
    if (name.startsWith('.current.')) await fsp.rm(path.join(dir, name), { force: true });
  }
}
