// The file index of a version the host has staged, made again from its tree and objects
// (docs/design.md §20.5): each file of a tree staged with objects is a hardlink to the object of
// its bytes, so its sha256 is the name of the object of the same inode, never a hash of its bytes.
// The result is only ever a dictionary for the next index's delta, whose output is checked
// against the signed integrity: a tree this misreads costs the delta, never trust.
import fs from 'node:fs';
import path from 'node:path';
import { encodeFileIndex } from '../../core/file-index.js';
import { MARKER_FILE_NAME } from '../../core/release-files.js';
import type { TreeEntry } from '../../core/tree-listing.js';
import { OBJECT_NAME_RE } from '../../platform/object-store.js';

// The index bytes of the tree at `tree`, or null when a file of it is no object (a tree staged
// before objects) or the tree cannot be read.
export function indexOfStagedTree(tree: string, objectsDir: string): Buffer | null {
  try {
    const byInode = new Map<number, string>();
    for (const sub of fs.readdirSync(objectsDir)) {
      if (!/^[0-9a-f]{2}$/.test(sub)) continue;
      for (const name of fs.readdirSync(path.join(objectsDir, sub))) {
        const m = OBJECT_NAME_RE.exec(name);
        if (m) byInode.set(fs.lstatSync(path.join(objectsDir, sub, name)).ino, m[1] as string);
      }
    }
    const entries: TreeEntry[] = [];
    const walk = (rel: string): boolean => {
      for (const name of fs.readdirSync(path.join(tree, rel))) {
        if (rel === '' && name === MARKER_FILE_NAME) continue;
        const p = rel === '' ? name : `${rel}/${name}`;
        const st = fs.lstatSync(path.join(tree, p));
        if (st.isDirectory()) {
          entries.push({ path: p, type: 'dir', mode: st.mode & 0o7777, size: 0 });
          if (!walk(p)) return false;
        } else if (st.isFile()) {
          const sha256 = byInode.get(st.ino);
          if (sha256 === undefined) return false;
          entries.push({ path: p, type: 'file', mode: st.mode & 0o7777, size: st.size, sha256 });
        } else if (st.isSymbolicLink()) {
          const target = fs.readlinkSync(path.join(tree, p));
          entries.push({ path: p, type: 'symlink', mode: 0o777, size: Buffer.byteLength(target), target });
        } else return false;
      }
      return true;
    };
    return walk('') ? encodeFileIndex(entries) : null;
  } catch {
    return null;
  }
}
