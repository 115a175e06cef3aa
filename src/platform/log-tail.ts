import { constants as C, promises as fsp } from 'node:fs';

// The last `maxLines` lines written to `file` from byte `fromOffset` on, reading at most the
// last `maxBytes` bytes. A cut first line is dropped; a file shorter than `fromOffset` (it was
// truncated) is read from its start; a missing file gives ''.
export async function tailLines(file: string, fromOffset: number, maxLines = 200, maxBytes = 256 * 1024): Promise<string> {
  if (maxLines <= 0 || maxBytes <= 0) return '';
  let h: fsp.FileHandle;
  try {
    h = await fsp.open(file, C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw err;
  }
  try {
    const st = await h.stat();
    if (!st.isFile()) return '';
    const from = fromOffset > st.size ? 0 : Math.max(0, fromOffset);
    const start = Math.max(from, st.size - maxBytes);
    const buf = await readFrom(h, start, st.size);
    let bytes = buf;
    if (start > from) {
      const nl = bytes.indexOf(0x0a);
      if (nl >= 0) bytes = bytes.subarray(nl + 1);
    }
    const lines = bytes.toString('utf8').split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    const kept = lines.slice(-maxLines);
    return kept.length === 0 ? '' : kept.join('\n') + '\n';
  } finally {
    await h.close();
  }
}

// The last `maxBytes` bytes of `file` (not following a symlink; a missing file or one that is not
// a regular file gives none).
export async function readTail(file: string, maxBytes: number): Promise<Buffer> {
  let h: fsp.FileHandle;
  try {
    h = await fsp.open(file, C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return Buffer.alloc(0);
    throw err;
  }
  try {
    const st = await h.stat();
    if (!st.isFile()) return Buffer.alloc(0);
    const start = Math.max(0, st.size - maxBytes);
    const buf = await readFrom(h, start, st.size);
    return buf;
  } finally {
    await h.close();
  }
}

// The bytes of an open file from `start` to `end` (fewer if it shrank meanwhile).
async function readFrom(h: fsp.FileHandle, start: number, end: number): Promise<Buffer> {
  const buf = Buffer.alloc(Math.max(0, end - start));
  let got = 0;
  while (got < buf.length) {
    const { bytesRead } = await h.read(buf, got, buf.length - got, start + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return buf.subarray(0, got);
}
