import path from 'node:path';
import type { ExtractLimits } from '../core/config-schema.js';

// The part of a node-tar ReadEntry the rules read: what node-tar will act on.
export interface EntryHeader {
  path: string;
  type: string;
  linkpath?: string | undefined;
  size?: number | undefined;
}

export type EntryVerdict = { verdict: 'write' } | { verdict: 'skip' } | { verdict: 'refuse'; message: string };

type Kind = 'file' | 'dir' | 'symlink' | 'implicit-dir';

const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);

// Formats a refusal as "unsafe archive: entry "<path JSON>": <rule>", the path cut to 256 characters.
export function unsafeMessage(entryPath: string | null, rule: string): string {
  if (entryPath === null) return `unsafe archive: ${rule}`;
  const shown = entryPath.length > 256 ? entryPath.slice(0, 256) + '...' : entryPath;
  return `unsafe archive: entry ${JSON.stringify(shown)}: ${rule}`;
}

function kindOf(type: string): Kind | string {
  if (FILE_TYPES.has(type)) return 'file';
  if (type === 'Directory') return 'dir';
  if (type === 'SymbolicLink') return 'symlink';
  if (type === 'Link') return 'hardlinks are not allowed';
  if (type === 'CharacterDevice' || type === 'BlockDevice') return `device files are not allowed (${type})`;
  if (type === 'FIFO') return 'FIFOs are not allowed';
  return `entry type ${JSON.stringify(type)} is not allowed`;
}

// Strips leading "./" and normalizes "a/./b", "a//b" and a trailing "/"; "" for the tree root.
export function normalizeEntryPath(p: string): string {
  const n = path.posix.normalize(p.replace(/^(\.\/+)+/, ''));
  const trimmed = n.replace(/\/+$/, '');
  return trimmed === '.' ? '' : trimmed;
}

// Our rules for one archive entry, checked on its header before node-tar writes anything
// (DESIGN §3.4). Stateful: it remembers every path so far, so one instance per archive.
export class EntryRules {
  entries = 0;
  declaredBytes = 0;
  private readonly kinds = new Map<string, Kind>();

  constructor(private readonly limits: ExtractLimits) {}

  check(e: EntryHeader): EntryVerdict {
    const refuse = (rule: string): EntryVerdict => ({ verdict: 'refuse', message: unsafeMessage(e.path, rule) });
    this.entries++;
    if (this.entries > this.limits.maxEntries) return refuse(`the archive holds more than ${this.limits.maxEntries} entries`);
    const kind = kindOf(e.type);
    if (kind !== 'file' && kind !== 'dir' && kind !== 'symlink') return refuse(kind);

    const p = e.path;
    if (p.includes('\0')) return refuse('path holds a NUL byte');
    if (p.startsWith('/')) return refuse('path is absolute');
    if (p.split('/').includes('..')) return refuse("path has a '..' component");
    const rel = normalizeEntryPath(p);
    if (rel === '') {
      // "./" is the tree root itself, as `tar -C dir .` writes it: skipped, so it cannot change dest's mode.
      return kind === 'dir' ? { verdict: 'skip' } : refuse('path is empty');
    }
    const depth = rel.split('/').length;
    if (depth > this.limits.maxDepth) return refuse(`path is deeper than ${this.limits.maxDepth} folders (${depth})`);
    if (Buffer.byteLength(p, 'utf8') > this.limits.maxPathLength) {
      return refuse(`path is longer than ${this.limits.maxPathLength} bytes`);
    }

    this.declaredBytes += e.size ?? 0;
    if (this.declaredBytes > this.limits.maxBytes) {
      return refuse(`the declared entry sizes add up to more than ${this.limits.maxBytes} bytes`);
    }

    if (kind === 'symlink') {
      const rule = this.checkLinkpath(rel, e.linkpath);
      if (rule) return refuse(rule);
    }
    const rule = this.claimPath(rel, kind);
    return rule ? refuse(rule) : { verdict: 'write' };
  }

  private checkLinkpath(rel: string, linkpath: string | undefined): string | null {
    if (!linkpath) return 'symlink has no target';
    if (linkpath.includes('\0')) return 'symlink target holds a NUL byte';
    if (linkpath.startsWith('/')) return `symlink target ${JSON.stringify(linkpath)} is absolute`;
    const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(rel), linkpath));
    if (resolved === '..' || resolved.startsWith('../')) {
      return `symlink target ${JSON.stringify(linkpath)} points outside the tree`;
    }
    return null;
  }

  // Records `rel` and refuses a path seen twice, a non-folder replacing a folder, and any
  // path below a symlink or file of the archive (nothing is ever written through a symlink).
  private claimPath(rel: string, kind: 'file' | 'dir' | 'symlink'): string | null {
    const parts = rel.split('/');
    for (let i = 1; i < parts.length; i++) {
      const prefix = parts.slice(0, i).join('/');
      const seen = this.kinds.get(prefix);
      if (seen === 'symlink') return `would be written through the symlink ${JSON.stringify(prefix)}`;
      if (seen === 'file') return `would be written below the file ${JSON.stringify(prefix)}`;
      if (seen === undefined) this.kinds.set(prefix, 'implicit-dir');
    }
    const seen = this.kinds.get(rel);
    if (seen === 'implicit-dir' && kind === 'dir') {
      this.kinds.set(rel, 'dir');
      return null;
    }
    if ((seen === 'implicit-dir' || seen === 'dir') && kind !== 'dir') return `a ${kind} would replace a folder`;
    if (seen === 'symlink' && kind !== 'symlink') return `a ${kind} would overwrite an earlier symlink`;
    if (seen !== undefined) return 'path appears twice in the archive';
    this.kinds.set(rel, kind);
    return null;
  }
}
