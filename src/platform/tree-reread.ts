import fs from 'node:fs';
import path from 'node:path';
import { MARKER_FILE_NAME } from '../core/release-files.js';
import type { TreeEntry } from '../core/tree-listing.js';
import { hashFile } from './object-store.js';

// Reads a staged release tree back from disk (lstat, never following a symlink; every file's
// bytes hashed again), as the tree digest lists it (docs/design.md §3.4), the marker at its top
// left out. `agentctl verify` (§20) compares its digest with the marker's; tests compare two
// trees' listings.
export async function rereadTree(root: string): Promise<TreeEntry[]> {
  const out: TreeEntry[] = [];
  const stack = [''];
  while (stack.length > 0) {
    const dirRel = stack.pop() as string;
    const names = fs.readdirSync(dirRel ? path.join(root, dirRel) : root).sort();
    for (const name of names) {
      if (!dirRel && name === MARKER_FILE_NAME) continue;
      const rel = dirRel ? `${dirRel}/${name}` : name;
      const abs = path.join(root, rel);
      const st = fs.lstatSync(abs);
      const mode = st.mode & 0o7777;
      if (st.isDirectory()) {
        out.push({ path: rel, type: 'dir', mode, size: 0 });
        stack.push(rel);
      } else if (st.isSymbolicLink()) {
        const target = fs.readlinkSync(abs);
        out.push({ path: rel, type: 'symlink', mode, size: Buffer.byteLength(target), target });
      } else if (st.isFile()) {
        out.push({ path: rel, type: 'file', mode, size: st.size, sha256: await hashFile(abs) });
      } else {
        // A device, FIFO or socket is no tree entry: listed as a file whose hash no digest holds.
        out.push({ path: rel, type: 'file', mode, size: st.size, sha256: 'not-a-regular-file' });
      }
    }
  }
  return out;
}
