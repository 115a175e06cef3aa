// A release's bytes on their way into the catalog: received from the admin API (or copied from
// the local CLI's file) into a private temporary file beside the kept tarballs, hashed as they
// arrive, then renamed into place by the transaction that adds the release, or removed.
import { createHash, randomBytes } from 'node:crypto';
import { constants as fsc, createReadStream, promises as fsp } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { StewardError } from '../../core/errors.js';
import { ensureDir, fsyncDir } from '../../platform/fs-atomic.js';

// Bytes waiting for a catalog transaction: `owned` files are temporary (the catalog renames or
// removes them); others are the operator's own and are only read.
export interface ReleaseBytes {
  file: string;
  size: number;
  integrity: string;
  owned: boolean;
}

// The largest tarball the admin API takes (docs/design.md §3 caps an extracted release at 2 GiB).
export const MAX_UPLOAD_BYTES = 2 * 1024 ** 3;

const uploadsDirOf = (artifactsDir: string) => path.join(artifactsDir, '.uploads');

// Streams `source` into a fresh temporary file (0600, in a 0700 folder) while hashing it,
// fsyncs it, and returns it. More than `maxBytes` is refused USAGE and leaves nothing.
export async function receiveUpload(artifactsDir: string, source: AsyncIterable<Buffer> | Readable, maxBytes = MAX_UPLOAD_BYTES): Promise<ReleaseBytes> {
  await ensureDir(artifactsDir, 0o700);
  await ensureDir(uploadsDirOf(artifactsDir), 0o700);
  const file = path.join(uploadsDirOf(artifactsDir), `${randomBytes(8).toString('hex')}.tgz.tmp`);
  const fh = await fsp.open(file, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600);
  const hash = createHash('sha512');
  let size = 0;
  let ok = false;
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) throw new StewardError('USAGE', `the release tarball is over ${maxBytes} bytes`);
      hash.update(chunk);
      await fh.write(chunk);
    }
    // Why: the catalog's transaction may rename this file into place; it must be on disk first.
    await fh.sync();
    ok = true;
  } finally {
    await fh.close();
    if (!ok) await fsp.rm(file, { force: true });
  }
  if (size === 0) {
    await fsp.rm(file, { force: true });
    throw new StewardError('USAGE', 'the release tarball is empty');
  }
  return { file, size, integrity: 'sha512-' + hash.digest('base64'), owned: true };
}

// The size and integrity of the operator's own file, read where it is.
export async function hashLocalFile(file: string): Promise<ReleaseBytes> {
  const hash = createHash('sha512');
  let size = 0;
  try {
    for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
      size += chunk.length;
      hash.update(chunk);
    }
  } catch (err) {
    throw new StewardError('NOT_FOUND', `cannot read the release tarball ${file}: ${(err as Error).message}`, { cause: err });
  }
  if (size === 0) throw new StewardError('USAGE', `${file} is empty`);
  return { file, size, integrity: 'sha512-' + hash.digest('base64'), owned: false };
}

// A temporary copy of the operator's own file, owned like an upload (copied before the
// catalog's transaction, so that the transaction holds the store's lock only for a rename).
export async function copyIntoUploads(artifactsDir: string, bytes: ReleaseBytes): Promise<ReleaseBytes> {
  if (bytes.owned) return bytes;
  return receiveUpload(artifactsDir, createReadStream(bytes.file), bytes.size);
}

// Renames owned bytes to `target` and fsyncs its folder.
export async function placeReleaseBytes(bytes: ReleaseBytes, target: string): Promise<void> {
  if (!bytes.owned) throw new Error(`${bytes.file}: only an upload's temporary file is renamed into the catalog`);
  // Private, as the database beside them: steward-control serves them itself.
  await ensureDir(path.dirname(path.dirname(target)), 0o700);
  await ensureDir(path.dirname(target), 0o700);
  await fsp.rename(bytes.file, target);
  await fsyncDir(path.dirname(target));
}

// Removes owned bytes that were not placed (nothing when they were, or are the operator's).
export async function discardReleaseBytes(bytes: ReleaseBytes): Promise<void> {
  if (bytes.owned) await fsp.rm(bytes.file, { force: true });
}
