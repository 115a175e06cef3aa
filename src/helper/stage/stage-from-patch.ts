// The objects a stage lacks, from a static zstd patch (docs/design.md §20.5,
// core/object-patch.ts) from a version the host has, instead of a pack. Every failure leaves
// nothing of the patch behind and sends the stage to the pack (stage-from-index.ts).
import { createHash } from 'node:crypto';
import fs, { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { ExtractLimits } from '../../core/config-schema.js';
import { hasZstd } from '../../core/compression.js';
import { StewardError, toStewardError } from '../../core/errors.js';
import { PackReader, packBytes } from '../../core/object-pack.js';
import { parsePatchHeader, patchDictionary, patchHeaderLength, patchWindowLog, PATCH_HEADER_MAX, PATCH_WINDOW_LOG_MAX, type PatchHeader } from '../../core/object-patch.js';
import type { Faults } from '../../platform/faults.js';
import { writeAll } from '../../platform/fs-atomic.js';
import { hasObjectSync, objectName, objectPath } from '../../platform/object-store.js';
import { logger } from '../../platform/log.js';
import { IncomingObject } from './incoming-object.js';
import { StreamDecoder } from './stream-decoder.js';

const log = logger('helper:patch');

// How many GETs one patch may take: the first and resumptions from where a cut left it.
export const PATCH_TRIES = 3;

// Where a patch comes from (stage-release.ts wires it).
export interface PatchSource {
  // The version the patch is from: a complete version the host has staged (the active one first).
  from: string;
  // The version being staged, which the patch must be to.
  to: string;
  // GETs the patch from byte `start` on (a Range), at most `maxBytes` of it, handing the bytes
  // to `sink`; returns how many came. FETCH_FAILED when cut, refused or absent.
  fetchPatch(start: number, maxBytes: number, sink: (chunk: Uint8Array) => Promise<void>): Promise<number>;
}

export interface PatchDeps {
  objectsDir: string;
  // The staging folder of this attempt: the patch is kept at `<work>/patch` while it is read.
  work: string;
  limits: ExtractLimits;
  // A patch longer than this is not worth fetching (the tarball's size).
  maxBytes: number;
  // The stage's fault points: `objects` write, as a pack's objects have (a full disk mid-patch).
  faults?: Faults;
}

export type PatchOutcome = { ok: true; wire: number } | { ok: false; wire: number; code: string | null; message: string };

type Want = { sha256: string; size: number; mode: number };

// Brings `missing` into `<incoming>/<sha256>` (verified, in their modes) from the patch to `to`,
// or says why not, having removed whatever it wrote. `sizes`: every file object of the signed index.
export async function receivePatch(d: PatchDeps, src: PatchSource, incoming: string, sizes: ReadonlyMap<string, number>, missing: readonly Want[]): Promise<PatchOutcome> {
  if (!hasZstd()) return { ok: false, wire: 0, code: null, message: `this runtime (Node ${process.versions.node}) has no zstd for a patch` };
  const to = src.to;
  const file = path.join(d.work, 'patch');
  const written: string[] = [];
  let wire = 0;
  try {
    wire = await download(src, file, d.maxBytes);
    await applyPatch(d, src.from, to, file, incoming, sizes, missing, written);
    log('patch from %s to %s applied: %d objects, %d bytes on the wire', src.from, to, missing.length, wire);
    return { ok: true, wire };
  } catch (err) {
    const e = toStewardError(err, 'IO_ERROR', `applying the patch from ${src.from} to ${to}`);
    // Why unlink: nothing the patch wrote stays for the pack (or a later stage) to meet.
    for (const f of written) await fsp.unlink(f).catch(() => undefined);
    if (e.code === 'DISK_FULL') throw e;
    log('patch from %s to %s not used (%s): %s', src.from, to, e.code, e.message);
    return { ok: false, wire, code: e.code, message: e.message };
  } finally {
    await fsp.rm(file, { force: true });
  }
}

// The patch into `file`, resumed by Range after a cut (at most PATCH_TRIES GETs, each bringing
// bytes); how many came over the wire.
async function download(src: PatchSource, file: string, maxBytes: number): Promise<number> {
  const fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, 0o600);
  let have = 0;
  try {
    for (let attempt = 1; ; attempt++) {
      const before = have;
      try {
        // Written synchronously: a chunk's write is less work than a thread-pool round trip, which
        // waits on the tree's layout running beside it (time-slice.ts).
        await src.fetchPatch(have, maxBytes - have, async (chunk) => {
          writeAll(fd, chunk);
          have += chunk.length;
        });
        return have;
      } catch (err) {
        if (have === before || attempt >= PATCH_TRIES) throw err;
        log('patch cut at byte %d (%s); asking for the rest', have, (err as Error).message);
      }
    }
  } finally {
    fs.closeSync(fd);
  }
}

async function readAt(fh: fs.promises.FileHandle, at: number, n: number): Promise<Buffer> {
  const b = Buffer.alloc(n);
  const { bytesRead } = await fh.read(b, 0, n, at);
  return b.subarray(0, bytesRead);
}

// Checks the header against the signed index and the host, builds the dictionary from the
// host's objects, and decodes the patch into the objects the host lacks.
async function applyPatch(d: PatchDeps, from: string, to: string, file: string, incoming: string, sizes: ReadonlyMap<string, number>, missing: readonly Want[], written: string[]): Promise<void> {
  const fh = await fsp.open(file, 'r');
  let header: PatchHeader;
  let bodyAt: number;
  try {
    const len = patchHeaderLength(await readAt(fh, 0, 4));
    const json = await readAt(fh, 4, len);
    if (json.length !== len) throw new StewardError('INTEGRITY_MISMATCH', 'the patch is shorter than its header');
    header = parsePatchHeader(json, d.limits.maxEntries);
    bodyAt = 4 + len;
  } finally {
    await fh.close();
  }
  if (header.from !== from || header.to !== to) throw new StewardError('INTEGRITY_MISMATCH', `the patch is from ${header.from} to ${header.to}, not from ${from} to ${to}`);
  for (const o of header.objects) {
    if (sizes.get(o.sha256) !== o.size) throw new StewardError('INTEGRITY_MISMATCH', `the patch names object ${o.sha256.slice(0, 16)}… of ${o.size} bytes, which is no file of the signed index`);
  }
  const named = new Set(header.objects.map((o) => o.sha256));
  const lacking = missing.filter((m) => !named.has(m.sha256));
  if (lacking.length > 0) throw new StewardError('NOT_FOUND', `the patch lacks ${lacking.length} of the objects the host needs`);
  const output = packBytes(header.objects.map((o) => o.size));
  // The dictionary: the host's own objects, each read and hashed against its name.
  const dict: Buffer[] = [];
  let dictBytes = 0;
  for (const base of patchDictionary(header.objects)) {
    const bytes = readBase(d.objectsDir, base);
    dictBytes += bytes.length;
    if (patchWindowLog(dictBytes, 0) === null) throw new StewardError('UNSAFE_ARCHIVE', `the patch's bases pass a 2^${PATCH_WINDOW_LOG_MAX}-byte window`);
    dict.push(bytes);
  }
  if (patchWindowLog(dictBytes, output) === null) throw new StewardError('UNSAFE_ARCHIVE', `the patch's ${dictBytes} bytes of bases and ${output} of objects pass a 2^${PATCH_WINDOW_LOG_MAX}-byte window`);
  await decode(file, bodyAt, Buffer.concat(dict), header, incoming, new Map(missing.map((m) => [m.sha256, m])), written, d.faults);
}

// The bytes of object `sha256` the host has (either mode), hashed against its name. A base the
// host lacks, or one that does not check out (then removed: never trusted again), is NOT_FOUND.
// Read synchronously: a patch's bases are the old versions of the few files that changed, and a
// thread-pool round trip per read waits on the tree's layout running beside it (time-slice.ts).
function readBase(objectsDir: string, sha256: string): Buffer {
  for (const mode of [0o444, 0o555]) {
    const name = objectName(sha256, mode);
    if (!hasObjectSync(objectsDir, name)) continue;
    const file = objectPath(objectsDir, name);
    const bytes = readNoFollowSync(file);
    if (createHash('sha256').update(bytes).digest('hex') === sha256) return bytes;
    // Why unlink: an object whose bytes are not its name is never linked or read again.
    try {
      fs.unlinkSync(file);
    } catch {
      // already gone
    }
  }
  throw new StewardError('NOT_FOUND', `the patch's base ${sha256.slice(0, 16)}… is no object the host has`);
}

// Decodes the patch's zstd stream (within the window cap, with the dictionary) through a pack
// reader of the header's objects: each is hashed against its name; those the host lacks are
// written to `<incoming>/<sha256>`, the others dropped. A byte past the objects is refused.
async function decode(file: string, at: number, dictionary: Buffer, header: PatchHeader, incoming: string, lack: ReadonlyMap<string, Want>, written: string[], faults?: Faults): Promise<void> {
  let out: IncomingObject | null = null;
  let hash = createHash('sha256');
  const reader = new PackReader(header.objects, {
    start: async (i) => {
      const m = lack.get((header.objects[i] as { sha256: string }).sha256);
      hash = createHash('sha256');
      if (!m) return;
      faults?.io('objects', 'write');
      const dest = path.join(incoming, m.sha256);
      out = new IncomingObject(dest, m.mode);
      written.push(dest);
    },
    data: async (chunk) => {
      hash.update(chunk);
      out?.write(chunk);
    },
    end: async (i) => {
      (out as IncomingObject | null)?.close();
      out = null;
      const want = (header.objects[i] as { sha256: string }).sha256;
      const got = hash.digest('hex');
      if (got !== want) throw new StewardError('INTEGRITY_MISMATCH', `the patch's object ${want.slice(0, 16)}… decodes to other bytes (sha256 ${got.slice(0, 16)}…)`);
    },
  });
  const decoder = new StreamDecoder('the patch', (c) => reader.push(c), PATCH_WINDOW_LOG_MAX, dictionary);
  try {
    for await (const chunk of fs.createReadStream(file, { start: at, highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) await decoder.write(chunk);
    await decoder.end();
    reader.finish();
  } catch (err) {
    throw decoder.failure instanceof StewardError ? decoder.failure : err;
  } finally {
    // The decompressor stopped first: a reader callback still running ends before the close
    // below and the caller's unlink of what was written.
    await decoder.stop();
    (out as IncomingObject | null)?.abandon();
  }
}

// A file's bytes through an fd opened O_NOFOLLOW (an object is never read through a symlink).
function readNoFollowSync(file: string): Buffer {
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  try {
    return fs.readFileSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

// The header cap, for docs and tests.
export { PATCH_HEADER_MAX };
