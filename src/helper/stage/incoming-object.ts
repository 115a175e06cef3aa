import fs from 'node:fs';
import { writeAll } from '../../platform/fs-atomic.js';

// One object's bytes being written from a pack or a patch to `objects-in/<sha256>` (never an object
// name: stage-from-index.ts puts it in place once it is verified and durable). Synchronous calls:
// a pack of 160 small objects took 640 thread-pool round trips (open, chmod, write, close), each
// waiting for a turn of an event loop busy laying out the tree beside it, so the pack came in
// 70 ms after the tree was done; written synchronously, each decoded chunk is done in one turn.
export class IncomingObject {
  private fd: number | null;

  // Creates `file` (never an existing one, never through a symlink) in the object's `mode`.
  constructor(
    readonly file: string,
    mode: number,
  ) {
    const fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, 0o600);
    try {
      // Why fchmod: the object's mode is its name's, whatever the umask.
      fs.fchmodSync(fd, mode);
    } catch (err) {
      fs.closeSync(fd);
      throw err;
    }
    this.fd = fd;
  }

  write(chunk: Uint8Array): void {
    if (this.fd === null) throw new Error(`${this.file} is closed`);
    writeAll(this.fd, chunk);
  }

  // Closes the file (once; a second call does nothing).
  close(): void {
    const fd = this.fd;
    this.fd = null;
    if (fd !== null) fs.closeSync(fd);
  }

  // Closes the file after a failure: an error closing it is not thrown (the caller unlinks what
  // was written, and reports the failure that came first).
  abandon(): void {
    try {
      this.close();
    } catch {
      // the failure reported is the one before
    }
  }
}
