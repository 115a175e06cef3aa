// The file system half of doctor's gathering: lstat without following symlinks, a capped walk
// of the trees root reads, and who should own what on this host.
import { promises as fsp, type Stats } from 'node:fs';
import path from 'node:path';
import type { HostPaths } from '../../core/paths.js';
import type { Entry, EntryType, Owners, TreeWalk } from '../../core/doctor/observations.js';
import { lookupGroup, lookupUser } from '../../platform/users.js';

// The walk stops here: release trees can be big, and doctor must answer quickly.
export const WALK_CAP = 100_000;

function typeOf(st: Stats): EntryType {
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isDirectory()) return 'dir';
  if (st.isFile()) return 'file';
  if (st.isSocket()) return 'socket';
  return 'other';
}

function toEntry(p: string, st: Stats): Entry {
  return { path: p, type: typeOf(st), uid: st.uid, gid: st.gid, mode: st.mode & 0o7777 };
}

// lstat of `p` as an Entry, or null when it does not exist.
export async function lstatEntry(p: string): Promise<Entry | null> {
  try {
    return toEntry(p, await fsp.lstat(p));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

// The trees root reads as code or config (docs/design.md §2).
export function readByRoot(paths: HostPaths): string[] {
  return [path.dirname(paths.configFile), path.dirname(paths.appsDir), paths.varLib];
}

// The folders above `roots` up to and including the root prefix (or /), each once.
export async function gatherAncestors(paths: HostPaths, roots: string[]): Promise<Entry[]> {
  const top = paths.root || '/';
  const seen = new Set<string>();
  for (const r of roots) {
    for (let d = path.dirname(r); ; d = path.dirname(d)) {
      seen.add(d);
      if (d === top || d === path.dirname(d)) break;
    }
  }
  const out: Entry[] = [];
  for (const d of [...seen].sort()) {
    const e = await lstatEntry(d).catch(() => null);
    if (e) out.push(e);
  }
  return out;
}

// Every entry under `roots` (the roots included), never following a symlink, at most `cap` entries.
export async function walkTrees(roots: string[], cap = WALK_CAP): Promise<TreeWalk> {
  const walk: TreeWalk = { roots, entries: [], capped: false, cap, unreadable: [] };
  const stack = [...roots].reverse();
  while (stack.length) {
    if (walk.entries.length >= cap) {
      walk.capped = true;
      break;
    }
    const p = stack.pop() as string;
    let st: Stats;
    try {
      st = await fsp.lstat(p);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') walk.unreadable.push({ path: p, error: (err as Error).message });
      continue;
    }
    walk.entries.push(toEntry(p, st));
    if (!st.isDirectory()) continue;
    try {
      const names = await fsp.readdir(p);
      for (const n of names.sort().reverse()) stack.push(path.join(p, n));
    } catch (err) {
      walk.unreadable.push({ path: p, error: (err as Error).message });
    }
  }
  return walk;
}

// Who should own what: root and steward in production; under a root prefix the current user
// stands in for both (the helper and agent run as it there), and the note says so.
export async function gatherOwners(paths: HostPaths): Promise<Owners> {
  const euid = process.geteuid?.() ?? 0;
  if (paths.root) {
    // The helper gives helper.sock and the receipts the steward group only when it is root.
    const group = euid === 0 ? await lookupGroup('steward') : null;
    const groupNote = group ? '' : '; the steward group is not checked';
    return { rootUid: euid, stewardUid: euid, stewardGid: group?.gid ?? null, note: `under the root prefix ${paths.root} the current user (uid ${euid}) stands in for root and steward${groupNote}`, accountProblem: '' };
  }
  const user = await lookupUser('steward');
  const group = await lookupGroup('steward');
  const missing = [user ? '' : 'user steward', group ? '' : 'group steward'].filter(Boolean);
  return {
    rootUid: 0,
    stewardUid: user?.uid ?? null,
    stewardGid: group?.gid ?? null,
    note: '',
    accountProblem: missing.length ? `no ${missing.join(', no ')} on this host, expected from sysusers.d (agentctl install)` : '',
  };
}
