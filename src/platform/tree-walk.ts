import fs from 'node:fs';
import path from 'node:path';
import { StewardError } from '../core/errors.js';
import { findSymlinkEscape } from './symlink-jail.js';
import { unsafeMessage } from './tar-entry-rules.js';
import type { WrittenEntry } from './tar-tree-writer.js';
import { treeDigestOf, type TreeEntry } from '../core/tree-listing.js';

export interface SealedTree {
  entries: number;
  bytes: number;
  treeDigest: string; // 'sha256-' + base64 over the canonical listing
  // Every entry as the digest lists it (paths relative to the tree), in walk order: the stage
  // files the tree's regular files as objects from it (docs/design.md §20), `release add` makes
  // the release's file index of it.
  listing: TreeEntry[];
}

interface Node {
  rel: string;
  abs: string;
  made: WrittenEntry;
}

const O_DIR = fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW;

function refuse(rel: string, rule: string): never {
  throw new StewardError('UNSAFE_ARCHIVE', unsafeMessage(rel, rule));
}

function describe(st: fs.Stats): string {
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device file';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  return 'not a file, folder or symlink';
}

// Lists the tree below `root` iteratively with lstat (never following a symlink) and checks
// every entry against what the writer made: the same kind, files with the links it made, the size
// and final mode written; nothing the writer did not make. As root, lchowns strays to 0:0.
// Pre-order: every folder comes before everything below it.
// Why UNSAFE_ARCHIVE for a difference: only the worker writes into this fresh 0700 folder,
// so a difference is a file system that did not keep the archive's names as given (case or
// Unicode folding, which the archive chooses), or a bug of ours; either way the tree is not
// the archive's and is refused, as the walk before it did.
function listTree(root: string, made: ReadonlyMap<string, WrittenEntry>, asRoot: boolean): Node[] {
  const nodes: Node[] = [];
  // The inode of each file the archive hardlinked: every name of it must be that one inode.
  const inodes = new Map<WrittenEntry, number>();
  const stack = [''];
  // Why concatenated, not path.join: readdir's names hold no '/' and are never '.' or '..', so
  // base/rel is already what join would return; joining each of 4,000 paths again cost ~1%.
  const base = path.resolve(root);
  while (stack.length > 0) {
    const dirRel = stack.pop() as string;
    for (const name of fs.readdirSync(dirRel ? `${base}/${dirRel}` : base).sort()) {
      const rel = dirRel ? `${dirRel}/${name}` : name;
      const abs = `${base}/${rel}`;
      const st = fs.lstatSync(abs);
      const kind = st.isFile() ? 'file' : st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'symlink' : null;
      if (kind === null) refuse(rel, `is ${describe(st)}`);
      const m = made.get(rel);
      if (m === undefined) refuse(rel, 'is in the tree but the extraction did not make it');
      if (m.kind !== kind) refuse(rel, `is a ${kind} but the extraction made a ${m.kind}`);
      if (kind === 'file') {
        const links = m.links ?? 1;
        if (st.nlink !== links) refuse(rel, `has ${st.nlink} hard links, not the ${links} the archive made`);
        if (links > 1) {
          const ino = inodes.get(m) ?? st.ino;
          if (st.ino !== ino) refuse(rel, 'is not the file the archive hardlinked it to');
          inodes.set(m, ino);
        }
        if (m.last === null) throw new StewardError('INTERNAL', `extracting ${rel}: the file was never finished`);
        if (st.size !== m.size) refuse(rel, `is ${st.size} bytes but ${m.size} were written`);
        if ((st.mode & 0o7777) !== m.mode) refuse(rel, `has mode ${(st.mode & 0o7777).toString(8)}, not ${m.mode.toString(8)}`);
      }
      // Why: the writer never sets owners, so this only catches a surprise; lchown never follows.
      if (asRoot && (st.uid !== 0 || st.gid !== 0)) fs.lchownSync(abs, 0, 0);
      nodes.push({ rel, abs, made: m });
      if (kind === 'dir') stack.push(rel);
    }
  }
  if (nodes.length !== made.size) {
    const seen = new Set(nodes.map((n) => n.rel));
    const missing = [...made.keys()].find((rel) => !seen.has(rel)) ?? '?';
    refuse(missing, 'was extracted but is no longer in the tree');
  }
  return nodes;
}

function chmodDir(abs: string, mode: number): void {
  const fd = fs.openSync(abs, O_DIR);
  try {
    fs.fchmodSync(fd, mode);
  } finally {
    fs.closeSync(fd);
  }
}

// The entry as the tree digest lists it.
function entryOf(n: Node): TreeEntry {
  const m = n.made;
  if (m.kind === 'file') return { path: n.rel, type: 'file', mode: m.mode, size: m.size, sha256: m.last as string };
  if (m.kind === 'symlink') return { path: n.rel, type: 'symlink', mode: m.mode, size: m.size, target: JSON.parse(m.last as string) as string };
  return { path: n.rel, type: 'dir', mode: m.mode, size: 0 };
}

// Checks an extracted tree again with lstat (docs/design.md §3.4) against `made`, what the writer
// made (TarTreeWriter.written), then makes it read-only: files are 0444/0555 already (the
// writer set them), folders become 0555, symlinks are untouched, `root` itself stays 0700
// (the caller writes the marker there and seals it later). Every symlink must resolve inside
// the tree and hold the target the archive gave. Returns the counts and the digest of the
// canonical listing, built from the sha256 the writer took of the bytes it wrote:
// `<kind> <path JSON> <mode octal> <size> <sha256 hex | target JSON | ->\n`, sorted by path bytes.
export function checkAndSealTree(root: string, made: ReadonlyMap<string, WrittenEntry>): SealedTree {
  const asRoot = process.getuid?.() === 0;
  const top = fs.lstatSync(root);
  if (!top.isDirectory()) throw new StewardError('UNSAFE_ARCHIVE', `unsafe archive: ${root} is not a folder after extraction`);
  if (asRoot && (top.uid !== 0 || top.gid !== 0)) fs.lchownSync(root, 0, 0);
  const nodes = listTree(root, made, asRoot);
  let bytes = 0;
  for (const n of nodes) {
    if (n.made.kind === 'file') bytes += n.made.size;
    if (n.made.kind !== 'symlink') continue;
    const escape = findSymlinkEscape(root, n.rel);
    if (escape) refuse(n.rel, escape);
    const target = fs.readlinkSync(n.abs);
    if (JSON.stringify(target) !== n.made.last) refuse(n.rel, `points to ${JSON.stringify(target)}, not to the target the archive gave`);
  }
  // Children before parents: a folder is made read-only only once nothing below it needs changing.
  for (let i = nodes.length - 1; i >= 0; i--) {
    const n = nodes[i] as Node;
    if (n.made.kind === 'dir') chmodDir(n.abs, n.made.mode);
  }
  chmodDir(root, 0o700);
  const listing = nodes.map(entryOf);
  return { entries: nodes.length, bytes, treeDigest: treeDigestOf(listing), listing };
}
