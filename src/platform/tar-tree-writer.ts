import fs from 'node:fs';
import path from 'node:path';
import type { ReadEntry } from 'tar';
import { StewardError } from '../core/errors.js';
import { normalizeEntryPath, unsafeMessage } from './tar-entry-rules.js';

const O_NEW_FILE = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW;

// Writes the files and folders that EntryRules let through into `dest`, a fresh 0700 folder
// nothing else writes into. Why not node-tar's UnpackSync: since 7.5 it mkdirs and lstats
// every parent of every entry again (no folder cache), each failing mkdir a thrown
// exception; on a 4,000-file tree that was most of the extraction's CPU. Here:
// - every parent is made once, non-recursively, by us, and remembered; an EEXIST on one we
//   did not make is an error, never "fine, it is there";
// - files are created O_EXCL|O_NOFOLLOW: nothing that exists is ever opened, overwritten or
//   followed (node-tar opens with 'w', which follows a symlink);
// - no symlink exists in the tree while it is written (the feed makes them last), and every
//   target path is checked to lie strictly below `dest` after normalization.
// Modes and mtimes as node-tar sets them: the entry's mode (already stripped to 0o777) under
// the process umask, folders with u+rwx so they can be filled; the tree walk sets the final ones.
export class TarTreeWriter {
  // Folders made so far, relative to dest ('' is dest itself).
  private readonly dirs = new Set<string>(['']);
  private readonly root: string;
  // The file being written, if any: closed by closeOpen() when the archive ends or fails mid-body.
  private openFd: number | null = null;

  constructor(
    dest: string,
    private readonly fail: (err: unknown) => void,
  ) {
    this.root = path.resolve(dest);
  }

  // Called for an entry the rules said to write (a file or a folder); consumes its body.
  write(entry: ReadEntry): void {
    const rel = normalizeEntryPath(entry.path);
    const abs = path.join(this.root, rel);
    // Defence in depth: the rules refused absolute paths and '..' already.
    if (rel === '' || !abs.startsWith(this.root + '/')) {
      this.fail(new StewardError('UNSAFE_ARCHIVE', unsafeMessage(entry.path, 'resolves outside the tree')));
      entry.resume();
      return;
    }
    try {
      this.makeParents(rel);
      if (entry.type === 'Directory') this.writeDir(entry, rel, abs);
      else this.writeFile(entry, abs);
    } catch (err) {
      this.fail(err);
      entry.resume();
    }
  }

  private makeParents(rel: string): void {
    const parts = rel.split('/');
    let sofar = '';
    for (let i = 0; i < parts.length - 1; i++) {
      sofar = sofar ? `${sofar}/${parts[i]}` : (parts[i] as string);
      if (this.dirs.has(sofar)) continue;
      fs.mkdirSync(path.join(this.root, sofar), 0o755);
      this.dirs.add(sofar);
    }
  }

  private writeDir(entry: ReadEntry, rel: string, abs: string): void {
    if (!this.dirs.has(rel)) {
      const mode = typeof entry.mode === 'number' ? entry.mode & 0o777 : 0o755;
      fs.mkdirSync(abs, mode | 0o700);
      this.dirs.add(rel);
    }
    if (entry.mtime) fs.utimesSync(abs, entry.atime ?? new Date(), entry.mtime);
    entry.resume();
  }

  private writeFile(entry: ReadEntry, abs: string): void {
    const mode = typeof entry.mode === 'number' ? entry.mode & 0o777 : 0o666;
    const fd = fs.openSync(abs, O_NEW_FILE, mode);
    this.openFd = fd;
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
    entry.on('data', (chunk: Buffer) => {
      // After closeOpen() the number may belong to someone else (the worker shares the helper's fds).
      if (failed || this.openFd !== fd) return;
      try {
        for (let off = 0; off < chunk.length; ) off += fs.writeSync(fd, chunk, off, chunk.length - off);
      } catch (err) {
        failed = true;
        this.fail(err);
      }
    });
    entry.on('end', () => {
      if (!failed && this.openFd === fd && entry.mtime) {
        try {
          fs.futimesSync(fd, entry.atime ?? new Date(), entry.mtime);
        } catch (err) {
          failed = true;
          this.fail(err);
        }
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
