// Turns parsed strace events into the ordered file-system operations on one root, on the
// inodes of a model of that root (the snapshot taken before the traced run). Pure.
import path from 'node:path';
import { FsModel, type FsOp } from './fs-model.js';
import { unescapeC, type Arg, type SyscallEvent } from './strace-parse.js';

export interface ToOpsOptions {
  // The absolute, real path of the traced root.
  root: string;
  // Relative paths whose operations are left out (tmpfs, logs).
  skip: (rel: string) => boolean;
  // Owner of what the traced processes create (they run as this user).
  owner?: { uid: number; gid: number };
}

// The file-system calls the explorer asks strace for.
export const TRACED_SYSCALLS = [
  'open', 'openat', 'creat', 'write', 'pwrite64', 'writev', 'pwritev', 'pwritev2', 'fsync', 'fdatasync', 'syncfs', 'sync',
  'rename', 'renameat', 'renameat2', 'symlink', 'symlinkat', 'unlink', 'unlinkat', 'mkdir', 'mkdirat', 'rmdir',
  'chmod', 'fchmod', 'fchmodat', 'chown', 'lchown', 'fchown', 'fchownat', 'link', 'linkat', 'truncate', 'ftruncate',
  'copy_file_range', 'sendfile', 'sendfile64', 'fallocate',
];

const O_FLAG = (args: Arg[], i: number) => (args[i]?.kind === 'raw' ? (args[i] as { text: string }).text : '');

// The operations of `events` that touch `opts.root`, applied as they go to `model` (a clone of
// the snapshot the caller keeps). Throws on a call it cannot model inside the root, so a new
// way of writing is noticed instead of silently missed.
export function traceToOps(events: SyscallEvent[], snapshot: FsModel, opts: ToOpsOptions): FsOp[] {
  const m = snapshot.clone();
  const ops: FsOp[] = [];
  const cursor = new Map<number, number>();
  const owner = opts.owner ?? { uid: 0, gid: 0 };

  // The root-relative path of an absolute one, or null outside the root or in a skipped part.
  const rel = (abs: string | null): string | null => {
    if (abs === null) return null;
    const clean = abs.replace(/ \(deleted\)$/, '');
    if (clean !== opts.root && !clean.startsWith(opts.root + '/')) return null;
    const r = path.posix.normalize(clean.slice(opts.root.length + 1));
    if (r === '.' || r === '') return '';
    return opts.skip(r) ? null : r;
  };
  const fdPath = (a: Arg | undefined): string | null => (a?.kind === 'fd' ? a.path : null);
  const str = (a: Arg | undefined): string => {
    if (a?.kind !== 'str') throw new Error(`expected a string argument, got ${JSON.stringify(a)}`);
    return a.value.toString('utf8');
  };
  // An absolute path from a (dirfd, path) pair.
  const at = (dirfd: Arg | undefined, p: string): string => (p.startsWith('/') ? p : path.posix.join(fdPath(dirfd) ?? '/', p));
  const octal = (a: Arg | undefined): number => {
    const t = a?.kind === 'raw' ? a.text : a?.kind === 'fd' ? String(a.fd) : '';
    return parseInt(t, 8);
  };
  const num = (a: Arg | undefined): number => (a?.kind === 'fd' ? a.fd : a?.kind === 'raw' ? Number(a.text) : NaN);
  const push = (op: FsOp) => {
    m.apply(op);
    ops.push(op);
  };

  for (const ev of events) {
    if (ev.ret < 0) continue;
    const a = ev.args;
    const where = { line: ev.line };
    const inoOf = (r: string): number => {
      const ino = m.lookup(r);
      if (ino === null) throw new Error(`line ${ev.line}: ${r} is not in the model: ${ev.text}`);
      return ino;
    };
    const entry = (r: string) => {
      const p = m.lookupParent(r);
      if (!p) throw new Error(`line ${ev.line}: the folder of ${r} is not in the model: ${ev.text}`);
      return p;
    };
    switch (ev.name) {
      case 'open':
      case 'openat':
      case 'creat': {
        const flags = ev.name === 'creat' ? 'O_CREAT|O_WRONLY|O_TRUNC' : O_FLAG(a, ev.name === 'open' ? 1 : 2);
        const abs = ev.retPath ?? at(ev.name === 'openat' ? a[0] : undefined, str(a[ev.name === 'openat' ? 1 : 0]));
        const r = rel(abs);
        if (r === null || !/O_WRONLY|O_RDWR|O_CREAT|O_TRUNC/.test(flags)) break;
        let ino = m.lookup(r);
        if (ino === null) {
          if (!flags.includes('O_CREAT')) throw new Error(`line ${ev.line}: opened ${r}, which the model does not have`);
          const { parent, name } = entry(r);
          ino = m.allocIno();
          push({ k: 'creat', parent, name, ino, mode: octal(a[ev.name === 'openat' ? 3 : ev.name === 'open' ? 2 : 1]) & 0o7777, ...owner, path: r, ...where });
        } else if (flags.includes('O_TRUNC') && m.get(ino).type === 'file') {
          push({ k: 'trunc', ino, size: 0, path: r, ...where });
        }
        const node = m.get(ino);
        cursor.set(ino, flags.includes('O_APPEND') && node.type === 'file' ? node.data.length : 0);
        break;
      }
      case 'write':
      case 'pwrite64':
      case 'writev':
      case 'pwritev':
      case 'pwritev2': {
        const r = rel(fdPath(a[0]));
        if (r === null) break;
        const ino = inoOf(r);
        const data = ev.name.includes('writev') ? iovecBytes(a[1]) : a[1]?.kind === 'str' ? a[1].value : Buffer.alloc(0);
        if (data.length < ev.ret) {
          throw new Error(`line ${ev.line}: strace cut the written bytes short (raise -s): ${ev.text.slice(0, 200)}`);
        }
        const off = ev.name === 'pwrite64' || ev.name === 'pwritev' || ev.name === 'pwritev2' ? num(a[3]) : (cursor.get(ino) ?? 0);
        if (!(ev.name.startsWith('p'))) cursor.set(ino, off + ev.ret);
        push({ k: 'write', ino, off, data: data.subarray(0, ev.ret), path: r, ...where });
        break;
      }
      case 'fsync':
      case 'fdatasync': {
        const r = rel(fdPath(a[0]));
        if (r === null) break;
        const ino = m.lookup(r);
        if (ino !== null) push({ k: 'fsync', ino, path: r, ...where });
        break;
      }
      case 'syncfs':
      case 'sync': {
        // One file system holds the whole root (the explorer's roots live in one temp folder).
        const p = ev.name === 'sync' ? opts.root : fdPath(a[0]);
        if (p === null || !(rel(p) !== null || opts.root.startsWith(p.replace(/\/$/, '') + '/') || p === '/')) break;
        push({ k: 'syncfs', path: rel(p) ?? '/', ...where });
        break;
      }
      case 'rename':
      case 'renameat':
      case 'renameat2': {
        const [from, to] = ev.name === 'rename' ? [at(undefined, str(a[0])), at(undefined, str(a[1]))] : [at(a[0], str(a[1])), at(a[2], str(a[3]))];
        const rf = rel(from);
        const rt = rel(to);
        if (rf === null && rt === null) break;
        if (rf === null || rt === null) throw new Error(`line ${ev.line}: a rename across the root's edge is not modelled: ${ev.text}`);
        const src = entry(rf);
        const dst = entry(rt);
        const ino = inoOf(rf);
        const replaced = m.lookup(rt);
        if (replaced !== null && m.get(replaced).type === 'dir') throw new Error(`line ${ev.line}: a rename over a folder is not modelled`);
        push({ k: 'rename', parent: src.parent, name: src.name, toParent: dst.parent, toName: dst.name, ino, path: `${rf} -> ${rt}`, ...where });
        break;
      }
      case 'symlink':
      case 'symlinkat': {
        const target = str(a[0]);
        const r = rel(ev.name === 'symlink' ? at(undefined, str(a[1])) : at(a[1], str(a[2])));
        if (r === null) break;
        const { parent, name } = entry(r);
        push({ k: 'symlink', parent, name, ino: m.allocIno(), target, ...owner, path: r, ...where });
        break;
      }
      case 'unlink':
      case 'unlinkat':
      case 'rmdir': {
        const r = rel(ev.name === 'unlinkat' ? at(a[0], str(a[1])) : at(undefined, str(a[0])));
        if (r === null) break;
        const dirFlag = ev.name === 'rmdir' || O_FLAG(a, 2).includes('AT_REMOVEDIR');
        const { parent, name } = entry(r);
        push({ k: dirFlag ? 'rmdir' : 'unlink', parent, name, ino: inoOf(r), path: r, ...where });
        break;
      }
      case 'mkdir':
      case 'mkdirat': {
        const [p, mode] = ev.name === 'mkdir' ? [at(undefined, str(a[0])), a[1]] : [at(a[0], str(a[1])), a[2]];
        const r = rel(p);
        if (r === null) break;
        const { parent, name } = entry(r);
        push({ k: 'mkdir', parent, name, ino: m.allocIno(), mode: octal(mode) & 0o7777, ...owner, path: r, ...where });
        break;
      }
      case 'chmod':
      case 'fchmod':
      case 'fchmodat': {
        const [p, mode] = ev.name === 'chmod' ? [at(undefined, str(a[0])), a[1]] : ev.name === 'fchmod' ? [fdPath(a[0]), a[1]] : [at(a[0], str(a[1])), a[2]];
        const r = rel(p);
        if (r === null) break;
        push({ k: 'chmod', ino: inoOf(r), mode: octal(mode) & 0o7777, path: r, ...where });
        break;
      }
      case 'chown':
      case 'lchown':
      case 'fchown':
      case 'fchownat': {
        const [p, u, g] = ev.name === 'fchown' ? [fdPath(a[0]), a[1], a[2]] : ev.name === 'fchownat' ? [at(a[0], str(a[1])), a[2], a[3]] : [at(undefined, str(a[0])), a[1], a[2]];
        const r = rel(p);
        if (r === null) break;
        push({ k: 'chown', ino: inoOf(r), uid: num(u), gid: num(g), path: r, ...where });
        break;
      }
      case 'link':
      case 'linkat': {
        const [from, to] = ev.name === 'link' ? [at(undefined, str(a[0])), at(undefined, str(a[1]))] : [at(a[0], str(a[1])), at(a[2], str(a[3]))];
        const rt = rel(to);
        if (rt === null) break;
        const rf = rel(from);
        if (rf === null) throw new Error(`line ${ev.line}: a hard link from outside the root is not modelled`);
        const { parent, name } = entry(rt);
        push({ k: 'link', parent, name, ino: inoOf(rf), path: rt, ...where });
        break;
      }
      case 'truncate':
      case 'ftruncate': {
        const r = rel(ev.name === 'truncate' ? at(undefined, str(a[0])) : fdPath(a[0]));
        if (r === null) break;
        push({ k: 'trunc', ino: inoOf(r), size: num(a[1]), path: r, ...where });
        break;
      }
      default: {
        // copy_file_range, sendfile, fallocate: bytes strace cannot show. Refuse inside the root.
        const target = ev.name === 'copy_file_range' ? fdPath(a[2]) : fdPath(a[0]);
        if (rel(target) !== null) throw new Error(`line ${ev.line}: ${ev.name} inside the root is not modelled: ${ev.text}`);
      }
    }
  }
  return ops;
}

// The bytes of a writev iovec array as strace prints it: [{iov_base="..", iov_len=N}, ...].
function iovecBytes(a: Arg | undefined): Buffer {
  if (a?.kind !== 'raw') return Buffer.alloc(0);
  const parts: Buffer[] = [];
  const re = /iov_base="/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(a.text))) {
    const start = m.index + m[0].length;
    let j = start;
    for (; j < a.text.length; j++) {
      if (a.text[j] === '\\') j++;
      else if (a.text[j] === '"') break;
    }
    parts.push(unescapeC(a.text.slice(start, j)));
    re.lastIndex = j;
  }
  return Buffer.concat(parts);
}

