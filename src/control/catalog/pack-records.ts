// The pack record of each server object kept already compressed (docs/design.md §20.5): beside
// `<artifacts>/<app>/objects/<sha256>` its record (object-pack.ts: sha256, length, bytes) as one
// gzip member, `<sha256>.rec.gz`, and where the runtime has zstd as one zstd frame,
// `<sha256>.rec.zst`. gzip members concatenate into one gzip stream and zstd frames into one
// zstd stream, so a pack answer is the concatenation of these files: no compression per request.
// The index is kept compressed the same way, `<version>.index.json.gz` / `.zst`.
import { constants as fsc, promises as fsp } from 'node:fs';
import path from 'node:path';
import { compressSync, hasZstd, type Compression } from '../../core/compression.js';
import { StewardError } from '../../core/errors.js';
import { packHeader } from '../../core/object-pack.js';
import { writeDurably } from './write-durably.js';

function suffix(c: Compression): string {
  return c === 'zstd' ? '.zst' : '.gz';
}

// Where the compressed record of object `sha256` is kept.
export function recordPath(objectsDir: string, sha256: string, c: Compression): string {
  return path.join(objectsDir, `${sha256}.rec${suffix(c)}`);
}

// Where the compressed copy of a kept index is.
export function compressedIndexPath(indexFile: string, c: Compression): string {
  return indexFile + suffix(c);
}

// The compressions the catalog keeps: gzip always (every helper reads it), zstd where it can.
export function keptCompressions(): Compression[] {
  return hasZstd() ? ['gzip', 'zstd'] : ['gzip'];
}

async function sizeOfFile(file: string): Promise<number | null> {
  const st = await fsp.lstat(file).catch(() => null);
  return st?.isFile() ? st.size : null;
}

// The compressed record of object `sha256` (`size` bytes), made from the object and written
// durably when absent (objects kept by a version from before §20.5): its path and its size.
// NOT_FOUND when the object itself is missing or not `size` bytes.
export async function ensureRecord(objectsDir: string, sha256: string, size: number, c: Compression): Promise<{ file: string; bytes: number }> {
  const file = recordPath(objectsDir, sha256, c);
  const have = await sizeOfFile(file);
  if (have !== null) return { file, bytes: have };
  // Why O_NOFOLLOW: the artifacts folder may be writable by others; never read through a symlink.
  const fh = await fsp.open(path.join(objectsDir, sha256), fsc.O_RDONLY | fsc.O_NOFOLLOW).catch(() => null);
  if (!fh) throw new StewardError('NOT_FOUND', `object ${sha256} is missing on the server`);
  let bytes: Buffer;
  try {
    bytes = await fh.readFile();
  } finally {
    await fh.close();
  }
  if (bytes.length !== size) throw new StewardError('NOT_FOUND', `object ${sha256} on the server is ${bytes.length} bytes, not ${size}`);
  const rec = compressSync(c, Buffer.concat([packHeader(sha256, size), bytes]));
  await writeDurably(file, rec);
  return { file, bytes: rec.length };
}

// The compressed copy of the index kept at `indexFile`, made and written durably when absent or
// older than the index (an index written again by hand is never shadowed by an old copy).
export async function ensureCompressedIndex(indexFile: string, c: Compression): Promise<{ file: string; bytes: number } | null> {
  const file = compressedIndexPath(indexFile, c);
  const [copy, index] = await Promise.all([fsp.lstat(file).catch(() => null), fsp.lstat(indexFile).catch(() => null)]);
  if (!index?.isFile()) return null;
  if (copy?.isFile() && copy.mtimeMs >= index.mtimeMs) return { file, bytes: copy.size };
  const fh = await fsp.open(indexFile, fsc.O_RDONLY | fsc.O_NOFOLLOW).catch(() => null);
  if (!fh) return null;
  let raw: Buffer;
  try {
    raw = await fh.readFile();
  } finally {
    await fh.close();
  }
  const z = compressSync(c, raw);
  await writeDurably(file, z);
  return { file, bytes: z.length };
}
