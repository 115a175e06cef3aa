// A static zstd patch between two releases of an app (docs/design.md §20.5):
// `<to>.from-<from>.patch` is a header, 4 bytes of its length (big-endian) then canonical JSON
// `{"from","objects":[{"base","sha256","size"}],"to","v":1}`, followed by one zstd stream that
// decodes, with the dictionary patchDictionary() names (the base objects' bytes), into exactly
// the pack records (object-pack.ts) of `objects`, in that order. `objects` are the distinct files
// of the new index that the old one lacks, in the new index's path order; `base` is the sha256 of
// the old file at the same path, or null.
import { StewardError } from './errors.js';
import type { TreeEntry } from './tree-listing.js';

// The largest header a helper reads (100,000 objects of ~190 bytes each fit).
export const PATCH_HEADER_MAX = 24 * 1024 * 1024;
// The largest zstd window a patch is made with and read with: 2^27, 128 MiB of dictionary and
// output; a patch that would need more is not made (and refused if met).
export const PATCH_WINDOW_LOG_MAX = 27;

const SHA256_RE = /^[0-9a-f]{64}$/;

export interface PatchObject {
  sha256: string;
  size: number;
  base: string | null;
}

export interface PatchHeader {
  v: 1;
  from: string;
  to: string;
  objects: PatchObject[];
}

// The objects of a patch from `oldEntries` to `newEntries` (both an index's entries).
export function planPatch(newEntries: readonly TreeEntry[], oldEntries: readonly TreeEntry[]): PatchObject[] {
  const had = new Set<string>();
  const oldAt = new Map<string, string>();
  for (const e of oldEntries) {
    if (e.type !== 'file') continue;
    had.add(e.sha256);
    oldAt.set(e.path, e.sha256);
  }
  const seen = new Set<string>();
  const objects: PatchObject[] = [];
  for (const e of newEntries) {
    if (e.type !== 'file' || had.has(e.sha256) || seen.has(e.sha256)) continue;
    seen.add(e.sha256);
    objects.push({ sha256: e.sha256, size: e.size, base: oldAt.get(e.path) ?? null });
  }
  return objects;
}

// The distinct bases of `objects`, in header order: the dictionary is their bytes concatenated.
export function patchDictionary(objects: readonly PatchObject[]): string[] {
  const bases: string[] = [];
  const seen = new Set<string>();
  for (const o of objects) {
    if (o.base === null || seen.has(o.base)) continue;
    seen.add(o.base);
    bases.push(o.base);
  }
  return bases;
}

// The zstd windowLog a patch of `dictionaryBytes` and `outputBytes` needs, or null past the cap.
export function patchWindowLog(dictionaryBytes: number, outputBytes: number): number | null {
  const log = Math.max(10, Math.ceil(Math.log2(dictionaryBytes + outputBytes + 1)));
  return log > PATCH_WINDOW_LOG_MAX ? null : log;
}

// The header's bytes: its length, then canonical JSON (keys sorted).
export function encodePatchHeader(h: PatchHeader): Buffer {
  const json = Buffer.from(JSON.stringify({ from: h.from, objects: h.objects.map((o) => ({ base: o.base, sha256: o.sha256, size: o.size })), to: h.to, v: 1 }));
  const len = Buffer.alloc(4);
  len.writeUInt32BE(json.length);
  return Buffer.concat([len, json]);
}

// The header's length from a patch's first 4 bytes, refused past PATCH_HEADER_MAX.
export function patchHeaderLength(first4: Buffer): number {
  if (first4.length < 4) throw new StewardError('INTEGRITY_MISMATCH', 'the patch is shorter than its header');
  const n = first4.readUInt32BE(0);
  if (n < 2 || n > PATCH_HEADER_MAX) throw new StewardError('UNSAFE_ARCHIVE', `the patch's header is ${n} bytes, past the ${PATCH_HEADER_MAX}-byte cap`);
  return n;
}

// A header's JSON, held to its shape: version 1, the versions named, at most `maxObjects`
// objects, each a lowercase hex sha256 once, a size, a base sha256 or null.
export function parsePatchHeader(json: Buffer, maxObjects: number): PatchHeader {
  let doc: unknown;
  try {
    doc = JSON.parse(json.toString('utf8'));
  } catch {
    throw new StewardError('INTEGRITY_MISMATCH', "the patch's header is not JSON");
  }
  const d = doc as Partial<Record<string, unknown>> | null;
  const bad = (why: string): never => {
    throw new StewardError('INTEGRITY_MISMATCH', `the patch's header ${why}`);
  };
  if (!d || typeof d !== 'object' || Array.isArray(d)) return bad('is not an object');
  if (Object.keys(d).sort().join(',') !== 'from,objects,to,v' || d.v !== 1) bad('is not {v:1, from, to, objects}');
  if (typeof d.from !== 'string' || typeof d.to !== 'string') bad('names no versions');
  if (!Array.isArray(d.objects)) return bad('has no objects');
  if (d.objects.length > maxObjects) throw new StewardError('UNSAFE_ARCHIVE', `the patch names ${d.objects.length} objects, more than the ${maxObjects} allowed`);
  const seen = new Set<string>();
  const objects: PatchObject[] = [];
  for (const o of d.objects as unknown[]) {
    const x = o as Partial<Record<string, unknown>> | null;
    if (!x || typeof x !== 'object' || Object.keys(x).sort().join(',') !== 'base,sha256,size') return bad('has a malformed object');
    if (typeof x.sha256 !== 'string' || !SHA256_RE.test(x.sha256) || seen.has(x.sha256)) return bad('names an object by a bad or repeated sha256');
    if (typeof x.size !== 'number' || !Number.isSafeInteger(x.size) || x.size < 0) return bad(`gives ${x.sha256.slice(0, 16)}… a bad size`);
    if (x.base !== null && (typeof x.base !== 'string' || !SHA256_RE.test(x.base))) return bad(`gives ${x.sha256.slice(0, 16)}… a bad base`);
    seen.add(x.sha256);
    objects.push({ sha256: x.sha256, size: x.size, base: x.base as string | null });
  }
  return { v: 1, from: d.from as string, to: d.to as string, objects };
}
