// An in-memory file system of inodes and directory entries: the root before a traced run,
// and what a crash state holds after replaying the operations that survived. Pure apart from
// `loadTree` and `writeTree`, which read a real folder into a model and write one out.
import { createHash } from 'node:crypto';
import { chmodSync, lchownSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export type Inode =
  | { type: 'file'; data: Buffer; mode: number; uid: number; gid: number }
  | { type: 'dir'; entries: Map<string, number>; mode: number; uid: number; gid: number }
  | { type: 'symlink'; target: string; uid: number; gid: number };

// One file-system operation on the root, on inodes (so a dropped rename of a folder leaves
// what was created inside it where it was, as on a real disk). `path` is for people only.
export type FsOp = (
  | { k: 'creat'; parent: number; name: string; ino: number; mode: number; uid: number; gid: number }
  | { k: 'mkdir'; parent: number; name: string; ino: number; mode: number; uid: number; gid: number }
  | { k: 'symlink'; parent: number; name: string; ino: number; target: string; uid: number; gid: number }
  | { k: 'link'; parent: number; name: string; ino: number }
  | { k: 'rename'; parent: number; name: string; toParent: number; toName: string; ino: number }
  | { k: 'unlink'; parent: number; name: string; ino: number }
  | { k: 'rmdir'; parent: number; name: string; ino: number }
  | { k: 'write'; ino: number; off: number; data: Buffer }
  | { k: 'trunc'; ino: number; size: number }
  | { k: 'chmod'; ino: number; mode: number }
  | { k: 'chown'; ino: number; uid: number; gid: number }
  | { k: 'fsync'; ino: number }
  | { k: 'syncfs' }
) & { path: string; line: number };

export const ROOT_INO = 1;

export class FsModel {
  readonly inodes: Map<number, Inode>;
  private nextIno: number;

  constructor(inodes?: Map<number, Inode>, nextIno = 2) {
    this.inodes = inodes ?? new Map([[ROOT_INO, { type: 'dir', entries: new Map(), mode: 0o755, uid: 0, gid: 0 }]]);
    this.nextIno = nextIno;
  }

  // A copy whose changes do not touch this model (file data is never mutated in place).
  clone(): FsModel {
    const copy = new Map<number, Inode>();
    for (const [ino, node] of this.inodes) copy.set(ino, node.type === 'dir' ? { ...node, entries: new Map(node.entries) } : { ...node });
    return new FsModel(copy, this.nextIno);
  }

  allocIno(): number {
    return this.nextIno++;
  }

  // The inode of a data operation; one whose creation was lost is an orphan no name reaches.
  private target(ino: number): Inode {
    let n = this.inodes.get(ino);
    if (!n) {
      n = { type: 'file', data: Buffer.alloc(0), mode: 0, uid: 0, gid: 0 };
      this.inodes.set(ino, n);
    }
    return n;
  }

  get(ino: number): Inode {
    const n = this.inodes.get(ino);
    if (!n) throw new Error(`no inode ${ino}`);
    return n;
  }

  private dir(ino: number): Extract<Inode, { type: 'dir' }> {
    const n = this.get(ino);
    if (n.type !== 'dir') throw new Error(`inode ${ino} is not a folder`);
    return n;
  }

  // The inode a relative path names (intermediate symlinks followed, the last one not), or null.
  lookup(rel: string): number | null {
    const r = this.lookupParent(rel);
    if (!r) return null;
    if (r.name === '') return r.parent;
    return this.dir(r.parent).entries.get(r.name) ?? null;
  }

  // The folder holding `rel` and the last name in it, or null when a folder on the way is missing.
  lookupParent(rel: string, depth = 0): { parent: number; name: string } | null {
    const parts = rel.split('/').filter((p) => p !== '' && p !== '.');
    if (parts.length === 0) return { parent: ROOT_INO, name: '' };
    let cur = ROOT_INO;
    const walked: string[] = [];
    for (const part of parts.slice(0, -1)) {
      const node = this.inodes.get(cur);
      if (!node || node.type !== 'dir') return null;
      const next = part === '..' ? null : node.entries.get(part);
      if (next === undefined || next === null) return null;
      const n = this.get(next);
      if (n.type === 'symlink') {
        if (depth > 8 || n.target.startsWith('/')) return null;
        const resolved = this.lookup(path.posix.join(walked.join('/'), n.target));
        if (resolved === null) return null;
        cur = resolved;
      } else cur = next;
      walked.push(part);
    }
    return { parent: cur, name: parts[parts.length - 1] as string };
  }

  // Applies one operation; throws when it cannot apply (a generator that broke a dependency).
  apply(op: FsOp): void {
    switch (op.k) {
      case 'creat':
      case 'mkdir':
      case 'symlink': {
        const d = this.dir(op.parent);
        if (d.entries.has(op.name)) throw new Error(`${op.k} ${op.path}: the name exists`);
        const owner = { uid: op.uid, gid: op.gid };
        this.inodes.set(
          op.ino,
          op.k === 'creat'
            ? { type: 'file', data: Buffer.alloc(0), mode: op.mode, ...owner }
            : op.k === 'mkdir'
              ? { type: 'dir', entries: new Map(), mode: op.mode, ...owner }
              : { type: 'symlink', target: op.target, ...owner },
        );
        d.entries.set(op.name, op.ino);
        if (op.ino >= this.nextIno) this.nextIno = op.ino + 1;
        return;
      }
      case 'link': {
        const d = this.dir(op.parent);
        if (d.entries.has(op.name)) throw new Error(`link ${op.path}: the name exists`);
        d.entries.set(op.name, op.ino);
        return;
      }
      case 'rename': {
        const from = this.dir(op.parent);
        if (from.entries.get(op.name) !== op.ino) throw new Error(`rename ${op.path}: the source is not there`);
        const to = this.dir(op.toParent);
        from.entries.delete(op.name);
        to.entries.set(op.toName, op.ino);
        return;
      }
      case 'unlink':
      case 'rmdir': {
        const d = this.dir(op.parent);
        if (d.entries.get(op.name) !== op.ino) throw new Error(`${op.k} ${op.path}: not there`);
        if (op.k === 'rmdir' && this.dir(op.ino).entries.size) throw new Error(`rmdir ${op.path}: not empty`);
        d.entries.delete(op.name);
        return;
      }
      case 'write': {
        const n = this.target(op.ino);
        if (n.type !== 'file') throw new Error(`write ${op.path}: not a file`);
        const end = op.off + op.data.length;
        const data = Buffer.alloc(Math.max(n.data.length, end));
        n.data.copy(data);
        op.data.copy(data, op.off);
        n.data = data;
        return;
      }
      case 'trunc': {
        const n = this.target(op.ino);
        if (n.type !== 'file') throw new Error(`truncate ${op.path}: not a file`);
        const data = Buffer.alloc(op.size);
        n.data.copy(data, 0, 0, Math.min(op.size, n.data.length));
        n.data = data;
        return;
      }
      case 'chmod': {
        const n = this.target(op.ino);
        if (n.type !== 'symlink') n.mode = op.mode;
        return;
      }
      case 'chown': {
        const n = this.target(op.ino);
        if (op.uid >= 0) n.uid = op.uid;
        if (op.gid >= 0) n.gid = op.gid;
        return;
      }
      case 'fsync':
      case 'syncfs':
        return;
    }
  }

  // Every reachable path with what it holds, in a stable order: the model's content.
  listing(): string[] {
    const out: string[] = [];
    const walk = (ino: number, rel: string) => {
      const n = this.get(ino);
      const own = `${n.uid}:${n.gid}`;
      if (n.type === 'dir') {
        out.push(`${rel}/ d ${n.mode.toString(8)} ${own}`);
        for (const name of [...n.entries.keys()].sort()) walk(n.entries.get(name) as number, `${rel}/${name}`);
      } else if (n.type === 'symlink') out.push(`${rel} l ${n.target} ${own}`);
      else out.push(`${rel} f ${n.mode.toString(8)} ${own} ${n.data.length} ${createHash('sha1').update(n.data).digest('hex')}`);
    };
    walk(ROOT_INO, '');
    return out;
  }

  // A digest of the content: two states with the same digest are the same disk.
  digest(): string {
    return createHash('sha256').update(this.listing().join('\n')).digest('hex');
  }
}

// loadTree and writeTree use the synchronous calls: an exploration writes out and reads back
// every state it checks (hundreds a scenario) in the test process, where each of the promised
// calls paid a trip through libuv's thread pool and, under node:test, its async hook on every
// promise (test/crash/explorer.ts). Still async, for their callers.

// Reads the folder `dir` into a model, skipping relative paths for which `skip` is true.
export async function loadTree(dir: string, skip: (rel: string) => boolean = () => false): Promise<FsModel> {
  const m = new FsModel();
  const top = lstatSync(dir);
  const root = m.get(ROOT_INO) as Extract<Inode, { type: 'dir' }>;
  root.mode = top.mode & 0o7777;
  root.uid = top.uid;
  root.gid = top.gid;
  const walk = (abs: string, ino: number, rel: string): void => {
    const d = m.get(ino) as Extract<Inode, { type: 'dir' }>;
    for (const name of readdirSync(abs).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      if (skip(r)) continue;
      const p = path.join(abs, name);
      const st = lstatSync(p);
      const child = m.allocIno();
      const own = { uid: st.uid, gid: st.gid };
      if (st.isDirectory()) {
        m.inodes.set(child, { type: 'dir', entries: new Map(), mode: st.mode & 0o7777, ...own });
        d.entries.set(name, child);
        walk(p, child, r);
      } else if (st.isSymbolicLink()) {
        m.inodes.set(child, { type: 'symlink', target: readlinkSync(p), ...own });
        d.entries.set(name, child);
      } else if (st.isFile()) {
        m.inodes.set(child, { type: 'file', data: readFileSync(p), mode: st.mode & 0o7777, ...own });
        d.entries.set(name, child);
      }
      // Sockets and FIFOs are not state that survives a power cut: left out.
    }
  };
  walk(dir, ROOT_INO, '');
  return m;
}

// Writes the model out as the folder `dir` (which must not exist), owners and modes included.
export async function writeTree(m: FsModel, dir: string): Promise<void> {
  const asRoot = process.getuid?.() === 0;
  const walk = (ino: number, abs: string): void => {
    const n = m.get(ino);
    if (n.type === 'dir') {
      mkdirSync(abs, { mode: 0o700 });
      for (const [name, child] of n.entries) walk(child, path.join(abs, name));
      if (asRoot) lchownSync(abs, n.uid, n.gid);
      // Last, so a read-only folder was still writable while it was filled.
      chmodSync(abs, n.mode);
    } else if (n.type === 'symlink') {
      symlinkSync(n.target, abs);
      if (asRoot) lchownSync(abs, n.uid, n.gid);
    } else {
      writeFileSync(abs, n.data, { mode: 0o600 });
      if (asRoot) lchownSync(abs, n.uid, n.gid);
      chmodSync(abs, n.mode);
    }
  };
  walk(ROOT_INO, dir);
}
