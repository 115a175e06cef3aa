import { StewardError } from './errors.js';

// A pack of file objects (docs/design.md §20): the answer to `POST <artifact>.pack` with the body
// `{"sha256":["<hex>", ...]}`, each object that many bytes as a record: 32 bytes of its sha256,
// 8 bytes of its length (big-endian), then its bytes; in the order asked, nothing else. The
// whole pack is exactly packBytes() long, so a client knows its length before the first byte; it
// is sent gzip-compressed (application/gzip), at most gzipBound() of that on the wire.
export const PACK_HEADER_BYTES = 40;
// At most this many objects in one request (extract.maxEntries' default).
export const PACK_MAX_OBJECTS = 100_000;

const SHA256_RE = /^[0-9a-f]{64}$/;

// The file index and packs travel gzip-compressed (docs/design.md §20); what `n` bytes may take on the
// wire at most (deflate's worst case is a few bytes per 16 KiB block, plus its header).
export function gzipBound(n: number): number {
  return n + Math.ceil(n / 100) + 1024;
}

// What a pack of objects of `sizes` may take on the wire at most, as the concatenation of one
// compressed record per object (docs/design.md §20.5): a gzip member or zstd frame each, whose
// header, trailer and block overhead this bounds.
export function packWireBound(sizes: readonly number[]): number {
  return sizes.reduce((n, s) => n + PACK_HEADER_BYTES + s + Math.ceil((PACK_HEADER_BYTES + s) / 100) + 64, 1024);
}

// The body of a pack request.
export function packRequestBody(shas: readonly string[]): Buffer {
  return Buffer.from(JSON.stringify({ sha256: shas }));
}

// The sha256s a pack request asks for: at most PACK_MAX_OBJECTS, each a hex sha256, no repeats.
export function parsePackRequest(body: Buffer): string[] {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch {
    throw new StewardError('BAD_REQUEST', 'a pack request is JSON: {"sha256":["<hex>", ...]}');
  }
  const shas = (doc as { sha256?: unknown } | null)?.sha256;
  if (!Array.isArray(shas) || Object.keys(doc as object).length !== 1) throw new StewardError('BAD_REQUEST', 'a pack request is {"sha256":["<hex>", ...]}');
  if (shas.length === 0 || shas.length > PACK_MAX_OBJECTS) throw new StewardError('BAD_REQUEST', `a pack request names 1 to ${PACK_MAX_OBJECTS} objects`);
  const seen = new Set<string>();
  for (const s of shas) {
    if (typeof s !== 'string' || !SHA256_RE.test(s)) throw new StewardError('BAD_REQUEST', 'a pack request names objects by their sha256 in lowercase hex');
    if (seen.has(s)) throw new StewardError('BAD_REQUEST', `a pack request names ${s} twice`);
    seen.add(s);
  }
  return shas as string[];
}

// The length of the pack of objects of `sizes`.
export function packBytes(sizes: readonly number[]): number {
  return sizes.reduce((n, s) => n + PACK_HEADER_BYTES + s, 0);
}

// The header of the record of an object.
export function packHeader(sha256: string, size: number): Buffer {
  const h = Buffer.alloc(PACK_HEADER_BYTES);
  Buffer.from(sha256, 'hex').copy(h, 0);
  h.writeBigUInt64BE(BigInt(size), 32);
  return h;
}

// Reads a pack as it arrives, against what was asked: each record's header must name the next
// object asked, with its size from the index; its bytes go to `sink` (which hashes them). Throws
// INTEGRITY_MISMATCH on anything else (a pack that decodes to something else).
export class PackReader {
  private i = 0;
  private header = Buffer.alloc(0);
  private left = 0;
  // Set when finish() found the pack ended before the objects asked (a cut, not other bytes).
  endedShort = false;

  constructor(
    private readonly want: ReadonlyArray<{ sha256: string; size: number }>,
    private readonly sink: { start(i: number): Promise<void>; data(chunk: Buffer): Promise<void>; end(i: number): Promise<void> },
  ) {}

  async push(chunk: Buffer): Promise<void> {
    let at = 0;
    while (at < chunk.length) {
      if (this.left === 0 && this.header.length < PACK_HEADER_BYTES) {
        if (this.i >= this.want.length) throw new StewardError('INTEGRITY_MISMATCH', 'the pack holds more than the objects asked');
        const take = Math.min(PACK_HEADER_BYTES - this.header.length, chunk.length - at);
        this.header = Buffer.concat([this.header, chunk.subarray(at, at + take)]);
        at += take;
        if (this.header.length < PACK_HEADER_BYTES) return;
        const w = this.want[this.i] as { sha256: string; size: number };
        const sha = this.header.subarray(0, 32).toString('hex');
        const size = this.header.readBigUInt64BE(32);
        if (sha !== w.sha256 || size !== BigInt(w.size)) {
          throw new StewardError('INTEGRITY_MISMATCH', `the pack's record ${this.i + 1} is ${sha.slice(0, 16)}… of ${size} bytes, not the ${w.sha256.slice(0, 16)}… of ${w.size} bytes asked`);
        }
        await this.sink.start(this.i);
        this.left = w.size;
        if (this.left === 0) await this.finishOne();
        continue;
      }
      const take = Math.min(this.left, chunk.length - at);
      await this.sink.data(chunk.subarray(at, at + take));
      at += take;
      this.left -= take;
      if (this.left === 0) await this.finishOne();
    }
  }

  private async finishOne(): Promise<void> {
    await this.sink.end(this.i);
    this.i++;
    this.header = Buffer.alloc(0);
  }

  // Throws unless every object asked came whole.
  finish(): void {
    this.endedShort = this.i < this.want.length;
    if (this.i !== this.want.length || this.left !== 0 || this.header.length !== 0) throw new StewardError('INTEGRITY_MISMATCH', `the pack ended after ${this.i} of ${this.want.length} objects`);
  }
}
