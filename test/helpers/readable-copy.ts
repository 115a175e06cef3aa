import { chmodSync, cpSync, lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO } from './host.js';

// Code or fixtures that a test runs as another user (nobody, an app's user, an app user inside
// a systemd container) are run from a copy made here, never from the checkout: the checkout may
// sit in a folder only its owner can enter (/root/steward), or have been cloned with umask 077,
// and the suite must pass from there too.

export interface ReadableCopy {
  // The copy's root: `items` keep their paths relative to the checkout under it.
  dir: string;
  // The path of `rel` (relative to the checkout) in the copy.
  path(rel: string): string;
  // Removes the copy. Idempotent.
  cleanup(): void;
}

// Copies `items` (paths relative to the checkout: files or folders) into a fresh temp folder that
// every user can read: folders 0755, files 0644, or 0755 when the checkout's file is executable.
// Symlinks are copied as they are (node_modules/.bin's relative links).
export function readableCopy(items: string[]): ReadableCopy {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-readable-'));
  for (const item of items) {
    cpSync(path.join(REPO, item), path.join(dir, item), { recursive: true, verbatimSymlinks: true });
  }
  openUp(dir);
  return {
    dir,
    path: (rel) => path.join(dir, rel),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

// The modes above, over the whole tree (the parents cpSync made for nested items included).
function openUp(p: string): void {
  const st = lstatSync(p);
  if (st.isSymbolicLink()) return;
  if (st.isDirectory()) {
    chmodSync(p, 0o755);
    for (const name of readdirSync(p)) openUp(path.join(p, name));
  } else {
    chmodSync(p, st.mode & 0o111 ? 0o755 : 0o644);
  }
}
