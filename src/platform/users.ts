import { readFileSync } from 'node:fs';

// Users and groups from /etc/passwd and /etc/group, read directly (no NSS: the
// helper only needs local system accounts such as `steward`).
export interface GroupEntry {
  name: string;
  gid: number;
  members: string[];
}

export interface UserEntry {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

// Synchronous: two small local files, read on every start of an app (a respawn's included),
// where an async read is four thread-pool round trips (issue 8 row 4).
async function readLines(file: string): Promise<string[]> {
  try {
    return readFileSync(file, 'utf8').split('\n');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

function toId(raw: string | undefined): number | null {
  if (raw === undefined || !/^\d+$/.test(raw)) return null;
  const n = Number(raw);
  return Number.isSafeInteger(n) ? n : null;
}

// The group named `name` in a group(5) file, or null.
export async function lookupGroup(name: string, groupFile = '/etc/group'): Promise<GroupEntry | null> {
  for (const line of await readLines(groupFile)) {
    const f = line.split(':');
    if (f.length < 4 || f[0] !== name) continue;
    const gid = toId(f[2]);
    if (gid === null) continue;
    return { name, gid, members: (f[3] ?? '').split(',').filter(Boolean) };
  }
  return null;
}

// The user named `name` in a passwd(5) file, or null.
export async function lookupUser(name: string, passwdFile = '/etc/passwd'): Promise<UserEntry | null> {
  for (const line of await readLines(passwdFile)) {
    const f = line.split(':');
    if (f.length < 7 || f[0] !== name) continue;
    const uid = toId(f[2]);
    const gid = toId(f[3]);
    if (uid === null || gid === null) continue;
    return { name, uid, gid, home: f[5] ?? '' };
  }
  return null;
}

// The first user with uid `uid` in a passwd(5) file, or null.
export async function lookupUserById(uid: number, passwdFile = '/etc/passwd'): Promise<UserEntry | null> {
  for (const line of await readLines(passwdFile)) {
    const f = line.split(':');
    if (f.length < 7 || toId(f[2]) !== uid) continue;
    const gid = toId(f[3]);
    if (gid === null) continue;
    return { name: f[0] ?? '', uid, gid, home: f[5] ?? '' };
  }
  return null;
}

// The account lookups the host config check needs (docs/design.md §2: process apps' user and group),
// from /etc/passwd and /etc/group.
export const systemAccounts = {
  user: async (n: string): Promise<{ name: string; id: number } | null> => {
    const u = await lookupUser(n);
    return u && { name: u.name, id: u.uid };
  },
  group: async (n: string): Promise<{ name: string; id: number } | null> => {
    const g = await lookupGroup(n);
    return g && { name: g.name, id: g.gid };
  },
};
