import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { ReadEntry } from 'tar';
import { StewardError } from '../core/errors.js';
import { normalizeEntryPath, unsafeMessage } from './tar-entry-rules.js';

const O_NEW_FILE = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW;

// One entry the writer made, as the tree walk must find it and the tree digest lists it.
export interface WrittenEntry {
  kind: 'file' | 'dir' | 'symlink';
  // The final mode: files 0444 (0555 when the archive gave any x bit), folders 0555, symlinks 0777.
  mode: number;
  size: number; // bytes written (file), target bytes (symlink), 0 (folder)
  // sha256 hex of the bytes written (file; null until its body ended), target JSON (symlink), '-' (folder).
  last: string | null;
  // A file's names in the tree: 1, or more once hardlinks of the archive were linked to it
  // (every name maps to this same record).
  links?: number;
}

const DIR: WrittenEntry = Object.freeze({ kind: 'dir', mode: 0o555, size: 0, last: '-' });

// The final mode of a file from its archive mode: read-only for everyone, executable by
// everyone when the archive gave it any x bit; no setuid/setgid/sticky bit ever.
export function finalFileMode(entryMode: number | undefined): number {
  return typeof entryMode === 'number' && (entryMode & 0o111) !== 0 ? 0o555 : 0o444;
}

// Writes the files, folders and symlinks that EntryRules let through into `dest`, a fresh
// 0700 folder nothing else writes into, and records each (`written`) with the sha256 and
// size of the bytes it wrote: the tree walk checks the tree against this record and builds
// the tree digest from it, so no file is read back. Why not node-tar's UnpackSync: since 7.5
// it mkdirs and lstats every parent of every entry again (no folder cache), each failing
// mkdir a thrown exception; on a 4,000-file tree that was most of the extraction's CPU. Here:
// - every parent is made once, non-recursively, by us, and remembered; an EEXIST on one we
//   did not make is an error, never "fine, it is there";
// - files are created O_EXCL|O_NOFOLLOW: nothing that exists is ever opened, overwritten or
//   followed (node-tar opens with 'w', which follows a symlink);
// - files are created with their final mode, and fchmod'ed on the open fd when the umask
//   took a bit of it;
// - no symlink exists in the tree while files are written (the feed asks for them last), and
//   every path is checked to lie strictly below `dest` after normalization.
// Folders are made u+rwx under the umask so they can be filled; the tree walk makes them 0555.
// Files keep the archive's mtime (a static file server may send it as Last-Modified).
// Folders do not: each file or folder created in one sets its mtime again, so setting the
// archive's at the folder's entry was a utimes wasted on all but empty folders.
export class TarTreeWriter {
  // Everything made so far, by path relative to dest ('' is dest itself, never listed).
  readonly written = new Map<string, WrittenEntry>();
  private readonly root: string;
  // The file being written, if any: closed by closeOpen() when the archive ends or fails mid-body.
  private openFd: number | null = null;
  private umask: number | undefined;

  constructor(
    dest: string,
    private readonly fail: (err: unknown) => void,
  ) {
    this.root = path.resolve(dest);
    // Why: under() puts a '/' after the root; the root is a staging folder, never / itself.
    if (this.root === '/') throw new StewardError('INTERNAL', 'the extraction folder cannot be /');
  }

  // The absolute path of `rel`, a normal relative path (checkedPath's): the root, '/', `rel`, which
  // is what path.join would return, without normalizing again a path that is normal already.
  private under(rel: string): string {
    return `${this.root}/${rel}`;
  }

  // Called for an entry the rules said to write (a file or a folder); consumes its body.
  write(entry: ReadEntry): void {
    const rel = this.checkedPath(entry.path);
    if (rel === null) {
      entry.resume();
      return;
    }
    try {
      this.makeParents(rel);
      if (entry.type === 'Directory') this.writeDir(entry, rel);
      else if (entry.type === 'Link') this.writeHardlink(entry, rel);
      else this.writeFile(entry, rel);
    } catch (err) {
      this.fail(err);
      entry.resume();
    }
  }

  // Makes a symlink the rules let through; called once every file and folder is written.
  writeSymlink(entryPath: string, target: string): void {
    const rel = this.checkedPath(entryPath);
    if (rel === null) return;
    try {
      // Parents are real folders: no archive path runs below a symlink (EntryRules).
      this.makeParents(rel);
      fs.symlinkSync(target, this.under(rel));
      this.written.set(rel, { kind: 'symlink', mode: 0o777, size: Buffer.byteLength(target), last: JSON.stringify(target) });
    } catch (err) {
      this.fail(err);
    }
  }

  // The normalized path of an entry, or null (and a failure) when it is not strictly below dest.
  private checkedPath(entryPath: string): string | null {
    const rel = normalizeEntryPath(entryPath);
    // Defence in depth: the rules refused absolute paths and '..' already. A normal path can hold
    // '..' only at its start.
    if (rel === '' || rel === '..' || rel.startsWith('../') || rel.startsWith('/')) {
      this.fail(new StewardError('UNSAFE_ARCHIVE', unsafeMessage(entryPath, 'resolves outside the tree')));
      return null;
    }
    return rel;
  }

  // Does the umask take a bit of `mode` (so that open(2) did not create the file with it)?
  // Read once: nothing in the worker changes it. The tree walk checks every file's mode anyway.
  private umaskCuts(mode: number): boolean {
    this.umask ??= process.umask();
    return (this.umask & mode) !== 0;
  }

  private isDir(rel: string): boolean {
    return rel === '' || this.written.get(rel)?.kind === 'dir';
  }

  private makeParents(rel: string): void {
    let end = rel.indexOf('/');
    while (end !== -1) {
      const sofar = rel.slice(0, end);
      if (!this.isDir(sofar)) {
        fs.mkdirSync(this.under(sofar), 0o755);
        this.written.set(sofar, DIR);
      }
      end = rel.indexOf('/', end + 1);
    }
  }

  private writeDir(entry: ReadEntry, rel: string): void {
    if (!this.isDir(rel)) {
      const mode = typeof entry.mode === 'number' ? entry.mode & 0o777 : 0o755;
      fs.mkdirSync(this.under(rel), mode | 0o700);
      this.written.set(rel, DIR);
    }
    entry.resume();
  }

  // Links `rel` to the file an earlier entry wrote (EntryRules checked that the target is one):
  // one more name of the same read-only inode, as GNU tar makes it. link(2) never follows a
  // symlink at the target (and none exists in the tree yet) nor replaces anything at `rel`.
  private writeHardlink(entry: ReadEntry, rel: string): void {
    entry.resume();
    const target = normalizeEntryPath(String(entry.linkpath ?? ''));
    const record = this.written.get(target);
    if (target === '' || record?.kind !== 'file' || record.last === null) {
      this.fail(new StewardError('UNSAFE_ARCHIVE', unsafeMessage(entry.path, `hardlink target ${JSON.stringify(entry.linkpath)} is not a file the extraction wrote`)));
      return;
    }
    fs.linkSync(this.under(target), this.under(rel));
    record.links = (record.links ?? 1) + 1;
    this.written.set(rel, record);
  }

  private writeFile(entry: ReadEntry, rel: string): void {
    const mode = finalFileMode(entry.mode);
    const fd = fs.openSync(this.under(rel), O_NEW_FILE, mode);
    this.openFd = fd;
    const record: WrittenEntry = { kind: 'file', mode, size: 0, last: null };
    this.written.set(rel, record);
    const hash = createHash('sha256');
    let failed = false;
    const close = (): void => {
      // closeOpen() may have closed it already: never close a number that may be reused.
      if (this.openFd !== fd) return;
      this.openFd = null;
      try {
        fs.closeSync(fd);
      } catch (err) {
        if (!failed) this.fail(err);
      }
    };
    try {
      // Why on the fd: the umask applied to open's mode; this is exact, and never follows a name.
      // Needed only when the umask takes a bit of it (022, the usual one, takes none of 0555).
      if (this.umaskCuts(mode)) fs.fchmodSync(fd, mode);
    } catch (err) {
      failed = true;
      close();
      throw err;
    }
    entry.on('data', (chunk: Buffer) => {
      // After closeOpen() the number may belong to someone else (the worker shares the helper's fds).
      if (failed || this.openFd !== fd) return;
      try {
        for (let off = 0; off < chunk.length; ) off += fs.writeSync(fd, chunk, off, chunk.length - off);
        hash.update(chunk);
        record.size += chunk.length;
      } catch (err) {
        failed = true;
        this.fail(err);
      }
    });
    entry.on('end', () => {
      if (failed || this.openFd !== fd) return close();
      try {
        if (entry.mtime) fs.futimesSync(fd, entry.atime ?? new Date(), entry.mtime);
        record.last = hash.digest('hex');
      } catch (err) {
        failed = true;
        this.fail(err);
      }
      close();
    });
  }

  // Closes a file left open by an archive cut inside its body (the worker's fds are the helper's).
  closeOpen(): void {
    if (this.openFd === null) return;
    const fd = this.openFd;
    this.openFd = null;
    try {
      fs.closeSync(fd);
    } catch {
      // Already failing: the first error is the one reported.
    }
  }
}
