import fs from 'node:fs';
import path from 'node:path';

export const MAX_SYMLINK_HOPS = 40;

// Resolves the symlink at `linkRel` (relative to `root`) the way the kernel would, one
// component at a time through the real tree, but jailed: returns null when every step
// stays inside `root`, else the reason it escapes. Lexical checks alone are not enough
// (`a/b -> ..` then `c -> a/b/../..` is lexically inside but really escapes).
// A dangling target is fine as long as it stays inside; after the first missing component
// the rest is resolved lexically, which can only refuse more.
export function findSymlinkEscape(root: string, linkRel: string): string | null {
  const stack = linkRel.split('/').slice(0, -1);
  const first = fs.readlinkSync(path.join(root, linkRel));
  if (first.startsWith('/')) return `symlink target ${JSON.stringify(first)} is absolute`;
  // Components still to resolve, last one first, so pop() yields the next.
  const todo = first.split('/').reverse();
  let hops = 0;
  let real = true;
  while (todo.length > 0) {
    const c = todo.pop() as string;
    if (c === '' || c === '.') continue;
    if (c === '..') {
      if (stack.length === 0) return `symlink target ${JSON.stringify(first)} resolves outside the tree`;
      stack.pop();
      continue;
    }
    stack.push(c);
    if (!real) continue;
    const abs = path.join(root, ...stack);
    let st: fs.Stats;
    try {
      st = fs.lstatSync(abs);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // A chain of symlinks can resolve to a path no entry has: one the kernel cannot resolve either.
      if (code === 'ENAMETOOLONG') return `symlink target ${JSON.stringify(first)} resolves to a path over the kernel's PATH_MAX`;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
      real = false;
      continue;
    }
    if (st.isSymbolicLink()) {
      if (++hops > MAX_SYMLINK_HOPS) return `symlink target ${JSON.stringify(first)} goes through more than ${MAX_SYMLINK_HOPS} symlinks`;
      const next = fs.readlinkSync(abs);
      if (next.startsWith('/')) return `symlink target ${JSON.stringify(first)} goes through a symlink with an absolute target`;
      stack.pop();
      for (const part of next.split('/').reverse()) todo.push(part);
    } else if (!st.isDirectory()) {
      real = false; // the kernel would stop here with ENOTDIR if more components follow
    }
  }
  return null;
}
