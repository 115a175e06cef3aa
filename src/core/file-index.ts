import { StewardError } from './errors.js';
import { MARKER_FILE_NAME } from './release-files.js';
import { sortByPathBytes, type TreeEntry } from './tree-listing.js';

// A release's file index (docs/design.md §20): every entry of the tree its tarball stages, as
// the tree digest lists it, in canonical JSON `{"entries":[...],"v":1}` (keys sorted, entries
// sorted by path bytes). Its integrity and size are in the signed manifest, so every object a
// helper links from it is covered by the release key's signature.
export const FILE_INDEX_VERSION = 1;
// At most this many bytes: 100,000 entries (extract.maxEntries' default) of long paths fit.
export const FILE_INDEX_MAX_BYTES = 64 * 1024 * 1024;

export interface IndexLimits {
  maxEntries: number;
  maxPathBytes: number;
  maxDepth: number;
  maxTotalBytes: number;
}

// The canonical bytes of an index of `entries` (a tree's listing, platform/tree-walk.ts).
export function encodeFileIndex(entries: readonly TreeEntry[]): Buffer {
  const rows = sortByPathBytes(entries).map((e) => {
    // Keys in code point order, as canonical JSON has them.
    if (e.type === 'file') return `{"mode":${e.mode},"path":${JSON.stringify(e.path)},"sha256":"${e.sha256}","size":${e.size},"type":"file"}`;
    if (e.type === 'symlink') return `{"mode":${e.mode},"path":${JSON.stringify(e.path)},"size":${e.size},"target":${JSON.stringify(e.target)},"type":"symlink"}`;
    return `{"mode":${e.mode},"path":${JSON.stringify(e.path)},"size":0,"type":"dir"}`;
  });
  return Buffer.from(`{"entries":[${rows.join(',')}],"v":${FILE_INDEX_VERSION}}`);
}

function refuse(why: string): never {
  throw new StewardError('UNSAFE_ARCHIVE', `unsafe file index: ${why}`);
}

// Whether `s` is 64 lowercase hex digits (a loop: the regex cost 3 ms on node-red's 8,300 files).
function isSha256Hex(s: unknown): s is string {
  if (typeof s !== 'string' || s.length !== 64) return false;
  for (let i = 0; i < 64; i++) {
    const c = s.charCodeAt(i);
    if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) return false;
  }
  return true;
}

function shownPath(p: string): string {
  return JSON.stringify(p.slice(0, 200));
}

// Checks one path as the extraction's rules check an archive's (docs/design.md §3.4): relative,
// no `.`, `..` or empty component, no NUL, within the byte and depth caps, never the marker.
function checkPath(p: unknown, limits: IndexLimits): string {
  if (typeof p !== 'string' || p.length === 0) refuse('an entry has no path');
  return plainAsciiPath(p, limits) ? p : checkPathFully(p, limits);
}

// Whether `p` passes every rule of checkPath by one scan of its characters, for the common path:
// ASCII (a byte a character), no NUL, no `.`, `..` or empty component, within the caps, not the
// marker. False means "not shown here", and checkPathFully decides (and names the rule broken).
function plainAsciiPath(p: string, limits: IndexLimits): boolean {
  const n = p.length;
  if (n > limits.maxPathBytes) return false;
  let parts = 1;
  let start = 0;
  for (let i = 0; i <= n; i++) {
    const c = i < n ? p.charCodeAt(i) : 47;
    if (c === 0 || c >= 0x80) return false;
    if (c !== 47) continue;
    const len = i - start;
    if (len === 0 || len > 255) return false;
    // '.' is 46: a component of one or two dots.
    if (p.charCodeAt(start) === 46 && (len === 1 || (len === 2 && p.charCodeAt(start + 1) === 46))) return false;
    if (i < n) parts++;
    start = i + 1;
  }
  return parts <= limits.maxDepth && p !== MARKER_FILE_NAME;
}

function checkPathFully(p: string, limits: IndexLimits): string {
  // A function: quoting every path costs more than checking it, and only a refusal shows it.
  const shown = (): string => shownPath(p);
  if (p.includes('\0')) refuse(`entry ${shown()} holds a NUL`);
  if (p.startsWith('/')) refuse(`entry ${shown()} is an absolute path`);
  const bytes = Buffer.byteLength(p);
  if (bytes > limits.maxPathBytes) refuse(`entry ${shown()} is longer than ${limits.maxPathBytes} bytes`);
  const parts = p.split('/');
  if (parts.length > limits.maxDepth) refuse(`entry ${shown()} is deeper than ${limits.maxDepth}`);
  for (const c of parts) {
    if (c === '' || c === '.' || c === '..') refuse(`entry ${shown()} has a ${c === '' ? 'empty' : JSON.stringify(c)} component`);
    // A path of at most 255 bytes has no longer component: most are, and are not measured again.
    if (bytes > 255 && Buffer.byteLength(c) > 255) refuse(`entry ${shown()} has a component longer than 255 bytes`);
  }
  if (p === MARKER_FILE_NAME) refuse(`entry ${shown()} is the marker's name`);
  return p;
}

// Whether `r` has exactly the keys `want` (sorted, as the refusal shows them).
function keysAre(r: Record<string, unknown>, want: readonly string[]): boolean {
  let n = 0;
  // Counted, not listed: Object.keys made an array per entry. JSON.parse gives plain objects.
  for (const k in r) if (Object.hasOwn(r, k)) n++;
  if (n !== want.length) return false;
  for (const k of want) if (!Object.hasOwn(r, k)) return false;
  return true;
}

function keysOf(r: Record<string, unknown>): string {
  return Object.keys(r).sort().join(',');
}

const FILE_KEYS = ['mode', 'path', 'sha256', 'size', 'type'];
const DIR_KEYS = ['mode', 'path', 'size', 'type'];
const SYMLINK_KEYS = ['mode', 'path', 'size', 'target', 'type'];

function safeInt(v: unknown, max: number): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v <= max;
}

// Parses and checks an index's bytes (already matched against the signed integrity): the
// version, the caps, one entry per path, every parent a folder listed before... (in any order),
// only regular files (0444 or 0555), folders (0555) and symlinks (0777) whose target stays inside
// the tree lexically; a hardlink, a device or anything else is refused. The helper checks each
// symlink again on the tree it builds (symlink-jail.ts), as it does an archive's.
// Fast for the index `release add` writes (entries sorted, ASCII paths): ~12 ms for node-red's
// 10,000 entries here, from ~22.
export function parseFileIndex(bytes: Buffer, limits: IndexLimits): TreeEntry[] {
  if (bytes.length > FILE_INDEX_MAX_BYTES) refuse(`it is ${bytes.length} bytes, over ${FILE_INDEX_MAX_BYTES}`);
  let doc: unknown;
  try {
    doc = JSON.parse(bytes.toString('utf8'));
  } catch {
    refuse('it is not JSON');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) refuse('it is not an object');
  const { v, entries, ...rest } = doc as Record<string, unknown>;
  if (Object.keys(rest).length > 0) refuse(`unknown key ${JSON.stringify(Object.keys(rest)[0])}`);
  if (v !== FILE_INDEX_VERSION) refuse(`version ${JSON.stringify(v)} is not ${FILE_INDEX_VERSION}`);
  if (!Array.isArray(entries)) refuse('it has no entries');
  if (entries.length > limits.maxEntries) refuse(`it names ${entries.length} entries, over the cap of ${limits.maxEntries}`);
  const out: TreeEntry[] = [];
  // The folders listed, for the parents' check; every path, only once the entries are found out
  // of order (sorted strictly, as `release add` writes them, no path can be listed twice).
  const dirs = new Set<string>();
  let seen: Set<string> | null = null;
  let prev = '';
  let total = 0;
  for (const raw of entries as unknown[]) {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) refuse('an entry is not an object');
    const r = raw as Record<string, unknown>;
    const p = checkPath(r.path, limits);
    if (seen === null && !(prev < p)) seen = new Set(out.map((e) => e.path));
    if (seen !== null) {
      if (seen.has(p)) refuse(`entry ${shownPath(p)} is listed twice`);
      seen.add(p);
    }
    prev = p;
    let e: TreeEntry;
    if (r.type === 'file') {
      if (!keysAre(r, FILE_KEYS)) refuse(`file ${shownPath(p)} has keys ${keysOf(r)}`);
      if (r.mode !== 0o444 && r.mode !== 0o555) refuse(`file ${shownPath(p)} has mode ${String(r.mode)}, not 0444 or 0555`);
      if (!isSha256Hex(r.sha256)) refuse(`file ${shownPath(p)} has no sha256`);
      if (!safeInt(r.size, limits.maxTotalBytes)) refuse(`file ${shownPath(p)} has a bad size`);
      total += r.size;
      if (total > limits.maxTotalBytes) refuse(`its files hold more than ${limits.maxTotalBytes} bytes`);
      e = { path: p, type: 'file', mode: r.mode, size: r.size, sha256: r.sha256 };
    } else if (r.type === 'dir') {
      if (!keysAre(r, DIR_KEYS) || r.mode !== 0o555 || r.size !== 0) refuse(`folder ${shownPath(p)} is not {mode 0555, size 0}`);
      e = { path: p, type: 'dir', mode: 0o555, size: 0 };
      dirs.add(p);
    } else if (r.type === 'symlink') {
      if (!keysAre(r, SYMLINK_KEYS) || r.mode !== 0o777) refuse(`symlink ${shownPath(p)} is not {mode 0777, target}`);
      const t = r.target;
      if (typeof t !== 'string' || t === '' || t.includes('\0') || Buffer.byteLength(t) > limits.maxPathBytes) refuse(`symlink ${shownPath(p)} has a bad target`);
      if (t.startsWith('/')) refuse(`symlink ${shownPath(p)} points to an absolute path`);
      if (r.size !== Buffer.byteLength(t)) refuse(`symlink ${shownPath(p)} has a size that is not its target's`);
      if (escapesLexically(p, t)) refuse(`symlink ${shownPath(p)} points outside the tree`);
      e = { path: p, type: 'symlink', mode: 0o777, size: r.size, target: t };
    } else {
      refuse(`entry ${shownPath(p)} is a ${JSON.stringify(String(r.type).slice(0, 40))}: only files, folders and symlinks are taken (no hardlink, device or FIFO)`);
    }
    out.push(e);
  }
  for (const e of out) {
    const slash = e.path.lastIndexOf('/');
    if (slash < 0) continue;
    const parent = e.path.slice(0, slash);
    if (!dirs.has(parent)) refuse(`entry ${JSON.stringify(e.path.slice(0, 200))} has no folder ${JSON.stringify(parent.slice(0, 200))} listed`);
  }
  return out;
}

// Whether `target`, read from the folder of `path`, leaves the tree by its `..` components alone.
function escapesLexically(path: string, target: string): boolean {
  const stack = path.split('/').slice(0, -1);
  for (const c of target.split('/')) {
    if (c === '' || c === '.') continue;
    if (c === '..') {
      if (stack.length === 0) return true;
      stack.pop();
    } else stack.push(c);
  }
  return false;
}
