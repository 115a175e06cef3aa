import { constants as C, ftruncateSync, promises as fsp, readSync, writeSync } from 'node:fs';

// How far past the cut a line's start is looked for; a longer line is cut where it is.
const LINE_LOOKAHEAD = 64 * 1024;
const CHUNK = 1024 * 1024;

// Cuts the app's log file in place once it is larger than `maxBytes`, keeping its newest part:
// the last half of `maxBytes`, from the start of a line. In place because the app holds the file
// open itself (O_APPEND, the helper holds no pipe): its next writes land at the new end. As with
// logrotate's copytruncate, a line the app writes between the last read of the copy and the
// truncate (microseconds) is lost. Returns how many bytes were cut from the start (0: none).
// The file is opened without following a symlink and must be a regular file with one link (the
// log folder is root's, so nobody else can put one there; see openLog in process-runner.ts).
export async function capLogFile(file: string, maxBytes: number): Promise<number> {
  let h: fsp.FileHandle;
  try {
    h = await fsp.open(file, C.O_RDWR | C.O_NOFOLLOW | C.O_NONBLOCK);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
  try {
    const st = await h.stat();
    if (!st.isFile() || st.nlink !== 1) throw new Error(`${file} is not a regular file with a single link`);
    if (st.size <= maxBytes) return 0;
    const cut = await lineStartAfter(h, st.size - Math.floor(maxBytes / 2));
    const buf = Buffer.allocUnsafe(CHUNK);
    let kept = 0;
    // The bulk of the copy, off the main thread, until less than a chunk is left.
    for (;;) {
      const { bytesRead } = await h.read(buf, 0, CHUNK, cut + kept);
      let done = 0;
      while (done < bytesRead) done += (await h.write(buf, done, bytesRead - done, kept + done)).bytesWritten;
      kept += bytesRead;
      if (bytesRead < CHUNK) break;
    }
    // The rest to the end, wherever it is by then (the app keeps appending), and the truncate
    // right after it, synchronously: what the app writes in between is lost, so that is kept to
    // a few microseconds. Why truncate: what follows the moved newest part is old.
    for (;;) {
      const n = readSync(h.fd, buf, 0, CHUNK, cut + kept);
      if (n === 0) break;
      for (let done = 0; done < n; ) done += writeSync(h.fd, buf, done, n - done, kept + done);
      kept += n;
    }
    ftruncateSync(h.fd, kept);
    return cut;
  } finally {
    await h.close();
  }
}

// The offset of the first line that starts at or after `at` (at itself when a line starts
// there), or `at` when none starts within LINE_LOOKAHEAD.
async function lineStartAfter(h: fsp.FileHandle, at: number): Promise<number> {
  const buf = Buffer.alloc(LINE_LOOKAHEAD + 1);
  const { bytesRead } = await h.read(buf, 0, buf.length, at - 1);
  const nl = buf.subarray(0, bytesRead).indexOf(0x0a);
  return nl < 0 ? at : at + nl;
}
