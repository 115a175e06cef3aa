import { randomBytes } from 'node:crypto';
import { constants as fsc, promises as fsp } from 'node:fs';
import path from 'node:path';
import { fsyncDir } from '../../platform/fs-atomic.js';

// The atomic file replace of DESIGN §2 with its mode (and optionally its group) set on
// the temp file through the open fd before the rename, so neither the umask nor a race
// on the final name can leave the file with other permissions than `mode`.
export async function writeFileAtomicFd(target: string, data: string | Uint8Array, mode: number, gid: number | null = null): Promise<void> {
  const tmp = path.join(path.dirname(target), `.${path.basename(target)}.${randomBytes(6).toString('hex')}.tmp`);
  const fh = await fsp.open(tmp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, mode);
  let renamed = false;
  try {
    // fchown/fchmod on the fd, never by path: the name could be swapped under us.
    if (gid !== null) await fh.chown(process.geteuid?.() ?? 0, gid);
    await fh.chmod(mode);
    await fh.writeFile(data);
    // Durable before visible: the rename must never expose a file that is not on disk.
    await fh.sync();
    await fh.close();
    await fsp.rename(tmp, target);
    renamed = true;
    await fsyncDir(path.dirname(target));
  } finally {
    if (!renamed) {
      await fh.close().catch(() => {});
      // Why: a failed write leaves no stray temp file behind in a root-owned folder.
      await fsp.rm(tmp, { force: true }).catch(() => {});
    }
  }
}

// Opens `file` without following a symlink and returns its bytes and fstat, or null
// when it does not exist. Anything other than a regular file of at most `maxBytes` throws.
export async function readRegularFile(file: string, maxBytes: number): Promise<{ bytes: Buffer; uid: number; mode: number } | null> {
  let fh;
  try {
    fh = await fsp.open(file, fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    if (code === 'ELOOP') throw Object.assign(new Error(`${file} is a symlink`), { code });
    throw err;
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw Object.assign(new Error(`${file} is not a regular file`), { code: 'EINVAL' });
    if (st.size > maxBytes) throw Object.assign(new Error(`${file} is larger than ${maxBytes} bytes`), { code: 'EFBIG' });
    const bytes = await fh.readFile();
    return { bytes, uid: st.uid, mode: st.mode & 0o7777 };
  } finally {
    await fh.close();
  }
}
