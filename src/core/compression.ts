// The two compressions steward moves bytes in (docs/design.md §20.5): gzip everywhere, zstd where
// the runtime's zlib has it (Node 22.15 and later). What a stream is, is read from its first
// bytes, never from a header alone: gzip members concatenate into one gzip stream and zstd frames
// into one zstd stream, which the control plane's pre-compressed pack records rely on.
import zlib from 'node:zlib';
import type { Transform } from 'node:stream';
import { StewardError } from './errors.js';

export type Compression = 'gzip' | 'zstd';

export const GZIP_MAGIC = Buffer.from([0x1f, 0x8b]);
export const ZSTD_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);

// zlib's zstd functions where the runtime has them (Node 22.15 and later), else null. Typed
// loosely: @types/node of Node 20 does not declare them.
interface ZstdZlib {
  zstdCompressSync(b: Buffer, o?: { params?: Record<number, number> }): Buffer;
  zstdDecompressSync(b: Buffer, o?: { maxOutputLength?: number; params?: Record<number, number> }): Buffer;
  createZstdCompress(o?: { params?: Record<number, number>; dictionary?: Buffer }): Transform;
  createZstdDecompress(o?: { params?: Record<number, number>; dictionary?: Buffer; maxOutputLength?: number; chunkSize?: number }): Transform;
}

const z = zlib as unknown as Partial<ZstdZlib> & { constants: Record<string, number> };

export function zstdOf(): ZstdZlib | null {
  return typeof z.zstdCompressSync === 'function' && typeof z.createZstdDecompress === 'function' ? (z as ZstdZlib) : null;
}

// Whether this runtime reads and writes zstd.
export function hasZstd(): boolean {
  return zstdOf() !== null;
}

// A zstd constant of zlib (ZSTD_c_windowLog ...), or throws where the runtime has none.
export function zstdConstant(name: string): number {
  const v = z.constants[name];
  if (typeof v !== 'number') throw new StewardError('INTERNAL', `this runtime's zlib has no ${name}`);
  return v;
}

// The Accept-Encoding a helper sends for an index, pack or patch: zstd first where it reads it.
export function acceptEncoding(): string {
  return hasZstd() ? 'zstd, gzip' : 'gzip';
}

// The compression an Accept-Encoding asks for that this runtime can make: zstd when named (with a
// q above 0) and had, gzip otherwise. `identity`, what a helper from before §20.5 sends, is gzip
// too (it reads gzip only).
export function chooseCompression(accept: string | undefined): Compression {
  if (!accept || !hasZstd()) return 'gzip';
  for (const part of accept.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (name?.trim() !== 'zstd') continue;
    const q = params.map((p) => /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(p)?.[1]).find((x) => x !== undefined);
    if (q === undefined || Number(q) > 0) return 'zstd';
  }
  return 'gzip';
}

// The compression `head` starts as, 'short' while fewer bytes than a magic are in hand, or null.
export function compressionOf(head: Uint8Array): Compression | 'short' | null {
  const starts = (m: Buffer): boolean | 'short' => {
    for (let i = 0; i < m.length; i++) {
      if (i >= head.length) return 'short';
      if (head[i] !== m[i]) return false;
    }
    return true;
  };
  const g = starts(GZIP_MAGIC);
  if (g === true) return 'gzip';
  const s = starts(ZSTD_MAGIC);
  if (s === true) return 'zstd';
  return g === 'short' || s === 'short' ? 'short' : null;
}

// The content type an answer of this compression carries (docs/protocol.md).
export function contentTypeOf(c: Compression): string {
  return c === 'zstd' ? 'application/zstd' : 'application/gzip';
}

// Compresses `bytes` as one gzip member or one zstd frame.
export function compressSync(c: Compression, bytes: Buffer): Buffer {
  if (c === 'gzip') return zlib.gzipSync(bytes, { level: 9 });
  const zs = zstdOf();
  if (!zs) throw noZstd('making a zstd artifact');
  return zs.zstdCompressSync(bytes, { params: { [zstdConstant('ZSTD_c_compressionLevel')]: 19 } });
}

// Decompresses a whole gzip or zstd buffer (read from its magic) to at most `maxOutput` bytes.
// INTEGRITY_MISMATCH when it is neither, does not decompress or is longer; UNSUPPORTED_COMPRESSION
// when it is zstd and this runtime lacks it.
export function decompressSync(bytes: Buffer, maxOutput: number, what: string): Buffer {
  const c = compressionOf(bytes);
  if (c !== 'gzip' && c !== 'zstd') throw new StewardError('INTEGRITY_MISMATCH', `${what} is neither gzip nor zstd`);
  try {
    if (c === 'gzip') return zlib.gunzipSync(bytes, { maxOutputLength: Math.max(1, maxOutput) });
    const zs = zstdOf();
    if (!zs) throw noZstd(what);
    return zs.zstdDecompressSync(bytes, { maxOutputLength: Math.max(1, maxOutput) });
  } catch (err) {
    if (err instanceof StewardError) throw err;
    throw new StewardError('INTEGRITY_MISMATCH', `${what} does not decompress to at most ${maxOutput} bytes (${(err as Error).message})`);
  }
}

// A streaming decompressor of `c` (zstd with at most a 2^windowLogMax window, and a raw-content
// dictionary when given: a static patch's bases, docs/design.md §20.5).
export function createDecompressor(c: Compression, what: string, windowLogMax = 27, dictionary?: Buffer): Transform {
  if (c === 'gzip') return zlib.createGunzip({ chunkSize: DECOMPRESS_CHUNK_BYTES });
  const zs = zstdOf();
  if (!zs) throw noZstd(what);
  return zs.createZstdDecompress({ chunkSize: DECOMPRESS_CHUNK_BYTES, params: { [zstdConstant('ZSTD_d_windowLogMax')]: windowLogMax }, ...(dictionary && dictionary.length > 0 ? { dictionary } : {}) });
}

// The decompressed bytes a stream hands on at a time. Each chunk is a round trip to the thread
// pool, and a stage lays out its tree on the main thread while a pack or patch decodes (turns of
// 2 ms, time-slice.ts): zlib's 16 KiB made a 900 KB pack 56 round trips waiting on those turns,
// most of a patch's time in node-red's stage (bench/objects.ts).
const DECOMPRESS_CHUNK_BYTES = 256 * 1024;

// The refusal of zstd bytes on a runtime without zstd.
export function noZstd(what: string): StewardError {
  return new StewardError('UNSUPPORTED_COMPRESSION', `${what} is zstd-compressed and this runtime (Node ${process.versions.node}) has no zstd (Node 22.15 and later have it)`);
}
