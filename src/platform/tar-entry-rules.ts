import path from 'node:path';
import type { ExtractLimits } from '../core/config-schema.js';
import { MARKER_FILE_NAME } from '../core/release-files.js';

// The part of a node-tar ReadEntry the rules read: what node-tar will act on.
export interface EntryHeader {
  path: string;
  type: string;
  linkpath?: string | undefined;
  size?: number | undefined;
  // node-tar's Dates from the header or a pax record; an Invalid Date when out of range.
  mtime?: Date | undefined;
  atime?: Date | undefined;
}

// Linux limits (linux/limits.h): a path handed to a system call, its NUL included, and one
// component of it. An entry the kernel would refuse is refused before anything is written, as
// UNSAFE_ARCHIVE: the archive's fault, not an I/O error of the host.
export const PATH_MAX = 4096;
export const NAME_MAX = 255;

export type EntryVerdict = { verdict: 'write' } | { verdict: 'skip' } | { verdict: 'refuse'; message: string };

type Kind = 'file' | 'dir' | 'symlink' | 'implicit-dir' | 'hardlink';

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
  if (type === 'Link') return 'hardlink';
  if (type === 'CharacterDevice' || type === 'BlockDevice') return `device files are not allowed (${type})`;
  if (type === 'FIFO') return 'FIFOs are not allowed';
  return `entry type ${JSON.stringify(type)} is not allowed`;
}

// What path.posix.normalize would change: a '.' or '..' component, '//', a trailing '/'.
const NEEDS_NORMALIZING = /(^|\/)\.\.?(\/|$)|\/\/|\/$/;

// Strips leading "./" and normalizes "a/./b", "a//b" and a trailing "/"; "" for the tree root.
// Why the early return: nearly every entry is already normal ("app/lib/x.js"), and normalizing
// each of 4,000 entries twice (the rules, the writer) was ~2% of an extraction's CPU.
export function normalizeEntryPath(p: string): string {
  if (p !== '' && !NEEDS_NORMALIZING.test(p)) return p;
  const n = path.posix.normalize(p.replace(/^(\.\/+)+/, ''));
  const trimmed = n.replace(/\/+$/, '');
  return trimmed === '.' ? '' : trimmed;
}

// The component of `rel` longer than NAME_MAX bytes, if any.
function overlongComponent(rel: string): string | undefined {
  return rel.split('/').find((c) => Buffer.byteLength(c, 'utf8') > NAME_MAX);
}

function isValidDate(d: Date | undefined): boolean {
  return d === undefined || Number.isFinite(d.getTime());
}

// Our rules for one archive entry, checked on its header before node-tar writes anything
// (docs/design.md §3.4). Stateful: it remembers every path so far, so one instance per archive.
// `prefixBytes` is the length of the longest folder the tree will live in (its staging folder
// or versions/<ver>), its trailing '/' included: every entry's full path must fit PATH_MAX there.
export class EntryRules {
  entries = 0;
  declaredBytes = 0;
  private readonly kinds = new Map<string, Kind>();

  constructor(
    private readonly limits: ExtractLimits,
    private readonly prefixBytes = 0,
  ) {}

  check(e: EntryHeader): EntryVerdict {
    const refuse = (rule: string): EntryVerdict => ({ verdict: 'refuse', message: unsafeMessage(e.path, rule) });
    this.entries++;
    if (this.entries > this.limits.maxEntries) return refuse(`the archive holds more than ${this.limits.maxEntries} entries`);
    const kind = kindOf(e.type);
    if (kind !== 'file' && kind !== 'dir' && kind !== 'symlink' && kind !== 'hardlink') return refuse(kind);

    const p = e.path;
    if (p.includes('\0')) return refuse('path holds a NUL byte');
    if (p.startsWith('/')) return refuse('path is absolute');
    if (p.split('/').includes('..')) return refuse("path has a '..' component");
    const rel = normalizeEntryPath(p);
    if (rel === '') {
      // "./" is the tree root itself, as `tar -C dir .` writes it: skipped, so it cannot change dest's mode.
      return kind === 'dir' ? { verdict: 'skip' } : refuse('path is empty');
    }
    const parts = rel.split('/');
    // Why: steward writes the marker into every tree last and trusts what it finds there; an
    // archive's own, as a file, a folder or a symlink, would sit in versions/ before steward's.
    if (parts[0] === MARKER_FILE_NAME) return refuse(`${MARKER_FILE_NAME} is the name of steward's marker; no archive may hold it`);
    if (parts.length > this.limits.maxDepth) return refuse(`path is deeper than ${this.limits.maxDepth} folders (${parts.length})`);
    if (Buffer.byteLength(p, 'utf8') > this.limits.maxPathLength) {
      return refuse(`path is longer than ${this.limits.maxPathLength} bytes`);
    }
    const limitRule = this.checkKernelLimits(rel);
    if (limitRule) return refuse(limitRule);
    // futimes(2) would fail with EINVAL on a time node-tar could not make a Date of.
    if (!isValidDate(e.mtime) || !isValidDate(e.atime)) return refuse('its modification or access time is out of range (not a valid date)');

    this.declaredBytes += e.size ?? 0;
    if (this.declaredBytes > this.limits.maxBytes) {
      return refuse(`the declared entry sizes add up to more than ${this.limits.maxBytes} bytes`);
    }

    if (kind === 'symlink') {
      const linkRule = this.checkLinkpath(rel, e.linkpath);
      if (linkRule) return refuse(linkRule);
    }
    if (kind === 'hardlink') {
      const linkRule = this.checkHardlinkTarget(e.linkpath);
      if (linkRule) return refuse(linkRule);
    }
    // A hardlink is one more name of a file: it claims its path as a file does.
    const claimRule = this.claimPath(rel, kind === 'hardlink' ? 'file' : kind);
    return claimRule ? refuse(claimRule) : { verdict: 'write' };
  }

  // NAME_MAX per component, and PATH_MAX for the entry's full path where the tree will live.
  private checkKernelLimits(rel: string): string | null {
    const long = overlongComponent(rel);
    if (long !== undefined) return `a path component is ${Buffer.byteLength(long, 'utf8')} bytes, over the kernel's ${NAME_MAX}-byte NAME_MAX`;
    const full = this.prefixBytes + Buffer.byteLength(rel, 'utf8');
    if (full >= PATH_MAX) {
      return `path is ${full} bytes once under the ${this.prefixBytes}-byte folder it is extracted into, over the kernel's ${PATH_MAX}-byte PATH_MAX`;
    }
    return null;
  }

  private checkLinkpath(rel: string, linkpath: string | undefined): string | null {
    if (!linkpath) return 'symlink has no target';
    if (linkpath.includes('\0')) return 'symlink target holds a NUL byte';
    if (linkpath.startsWith('/')) return `symlink target ${JSON.stringify(linkpath)} is absolute`;
    const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(rel), linkpath));
    if (resolved === '..' || resolved.startsWith('../')) {
      return `symlink target ${JSON.stringify(linkpath)} points outside the tree`;
    }
    // symlink(2) takes a target below PATH_MAX; resolving it walks each component.
    if (Buffer.byteLength(linkpath, 'utf8') >= PATH_MAX) return `symlink target is over the kernel's ${PATH_MAX}-byte PATH_MAX`;
    const rule = overlongComponent(linkpath) !== undefined ? this.checkKernelLimits(linkpath) : this.checkKernelLimits(resolved);
    return rule ? `symlink target ${rule}` : null;
  }

  // A hardlink names its target from the archive's root (not from its own folder, as a symlink
  // does), and GNU tar links it to what that path is when the link is read: only a regular file
  // an earlier entry of this archive wrote (a file, or a hardlink to one) is a target; never a
  // folder, a symlink, a later or missing entry, nor anything outside the tree.
  private checkHardlinkTarget(linkpath: string | undefined): string | null {
    if (!linkpath) return 'hardlink has no target';
    const shown = JSON.stringify(linkpath);
    if (linkpath.includes('\0')) return 'hardlink target holds a NUL byte';
    if (linkpath.startsWith('/')) return `hardlink target ${shown} is absolute`;
    if (linkpath.split('/').includes('..')) return `hardlink target ${shown} has a '..' component`;
    const target = normalizeEntryPath(linkpath);
    const seen = this.kinds.get(target);
    if (seen === 'file') return null;
    if (seen === undefined) return `hardlink target ${shown} is not an earlier entry of the archive`;
    return `hardlink target ${shown} is a ${seen === 'implicit-dir' ? 'dir' : seen}, not a regular file`;
  }

  // Records `rel` and refuses a path seen twice, a non-folder replacing a folder, and any
  // path below a symlink or file of the archive (nothing is ever written through a symlink).
  private claimPath(rel: string, kind: 'file' | 'dir' | 'symlink'): string | null {
    // `rel` is normal (no empty, '.' or '..' component): each '/' ends one of its folders.
    for (let end = rel.indexOf('/'); end !== -1; end = rel.indexOf('/', end + 1)) {
      const prefix = rel.slice(0, end);
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
