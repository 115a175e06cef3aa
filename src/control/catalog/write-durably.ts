import { randomBytes } from 'node:crypto';
import { constants as fsc, promises as fsp } from 'node:fs';

// Writes `bytes` to `dest` by a temporary name, fsynced, then renamed: a crash leaves the whole
// file or none, and two writers of the same bytes race harmlessly.
export async function writeDurably(dest: string, bytes: Buffer): Promise<void> {
  const tmp = `${dest}.${randomBytes(6).toString('hex')}.tmp`;
  const fh = await fsp.open(tmp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o644);
  try {
    await fh.writeFile(bytes);
    await fh.sync();
  } catch (err) {
    await fh.close().catch(() => undefined);
    await fsp.rm(tmp, { force: true });
    throw err;
  }
  await fh.close();
  await fsp.rename(tmp, dest);
}
