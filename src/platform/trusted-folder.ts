// The one rule for every file root reads as trust or config (docs/design.md §2: nothing another user
// can write is read by root as code or config): the host config, the trusted release keys, the
// CA file of the helper's fetches, the helper key, agentctl's compile cache. A file is trusted
// only when it, its folder and every folder above it, down from the root prefix, are owned by
// root and not writable by group or others; the file is never a symlink. This file holds the
// rule and the folders' side of it; trusted-file.ts reads a file under it. Why apart: the rule
// alone needs node:fs and node:path only, and agentctl checks its compile cache's folder with it
// before it loads anything else (compile-cache.ts).
import { promises as fsp, type Stats } from 'node:fs';
import path from 'node:path';

// Where the rule applies and whom it trusts.
export interface TrustScope {
  // The folder from which down every folder is held to the whole rule: the root prefix (or /)
  // for what lies inside it, else the folder of the file. Folders above it are only checked as
  // root, and may be group/other-writable if sticky (such as /tmp): nobody else may rename or
  // remove what root made there (the rule root-prefix.ts applies to the prefix).
  from: string;
  // The reader's uid. Root trusts root only. An unprivileged reader (tests, the demo) trusts root
  // and itself, and still refuses what group or others could write.
  uid: number;
  // Hold the folders above `from` to root's rule for an unprivileged reader too (owned by root or
  // the reader; writable by group or others only when sticky): for what a reader runs as code
  // from its own folders (compile-cache.ts), where a folder another user could write on the way
  // would let that user swap what lies below it.
  above?: boolean;
}

// The scope for reading what lies in `folder`: held to the rule from the root prefix down when
// `root` is given ('' is production, from /) and `folder` lies inside it, else from `folder`.
export function trustScope(folder: string, root?: string): TrustScope {
  const top = root === undefined ? null : root || '/';
  const dir = path.resolve(folder);
  return { from: top !== null && isInside(dir, top) ? top : dir, uid: process.geteuid?.() ?? 0 };
}

// The rule in one sentence, for error messages.
export function trustRule(scope: TrustScope): string {
  const owner = scope.uid === 0 ? 'root' : `root or this user (uid ${scope.uid})`;
  return `a file read as trust or config must be owned by ${owner} and not writable by group or others, and so must every folder above it; it must not be a symlink`;
}

function isInside(p: string, top: string): boolean {
  return top === '/' || p === top || p.startsWith(top + '/');
}

function ownerProblem(p: string, uid: number, scope: TrustScope): string | null {
  if (uid === 0 || uid === scope.uid) return null;
  return `${p} is owned by uid ${uid}, not ${scope.uid === 0 ? 'root' : `root or uid ${scope.uid}`}`;
}

function writeProblem(p: string, mode: number): string | null {
  if ((mode & 0o022) === 0) return null;
  return `${p} is writable by group or others (mode ${(mode & 0o7777).toString(8)})`;
}

// What is wrong with a file's owner and mode (`mode`: its permission bits), or null.
export function fileTrustProblem(file: string, uid: number, mode: number, scope: TrustScope): string | null {
  return ownerProblem(file, uid, scope) ?? writeProblem(file, mode);
}

function folderProblem(dir: string, st: Stats, scope: TrustScope): string | null {
  if (!st.isDirectory()) return `${dir} is not a folder`;
  if (isInside(dir, scope.from)) return ownerProblem(dir, st.uid, scope) ?? writeProblem(dir, st.mode);
  // Above the scope: only root answers for the folders it passes through on its way down (or an
  // unprivileged reader that asks for it).
  if (scope.uid !== 0 && !scope.above) return null;
  return ownerProblem(dir, st.uid, scope) ?? ((st.mode & 0o1000) !== 0 ? null : writeProblem(dir, st.mode));
}

const MAX_LINKS = 40;

// What makes `dir` unfit to hold a trusted file, or null: the first folder from / down to it
// that breaks the rule. A symlinked folder on the way is followed and the folders it leads to are
// checked in turn (the link itself lies in a folder already checked). A missing folder is no
// problem here: there is nothing in it to trust.
export async function folderTrustProblem(dir: string, scope: TrustScope): Promise<string | null> {
  let rest = path.resolve(dir).split('/').filter(Boolean);
  let cur = '/';
  let links = 0;
  let st = await fsp.lstat('/');
  let why = folderProblem('/', st, scope);
  while (!why && rest.length > 0) {
    const next = path.join(cur, rest.shift() as string);
    try {
      st = await fsp.lstat(next);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    if (st.isSymbolicLink()) {
      if (++links > MAX_LINKS) return `${dir}: more than ${MAX_LINKS} symlinks on the way`;
      // Start again from / along the link's target and what remained after the link.
      rest = [...path.resolve(cur, await fsp.readlink(next)).split('/').filter(Boolean), ...rest];
      cur = '/';
      continue;
    }
    why = folderProblem(next, st, scope);
    cur = next;
  }
  return why;
}

