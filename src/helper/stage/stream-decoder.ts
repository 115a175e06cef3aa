// Decompresses an index, pack or patch answer as it arrives, gzip or zstd as its first bytes say
// (docs/protocol.md), handing each decompressed chunk to `out` in order.
import type { Transform } from 'node:stream';
import { compressionOf, createDecompressor } from '../../core/compression.js';
import { StewardError } from '../../core/errors.js';
import { drained } from '../../platform/drained.js';

export class StreamDecoder {
  private head: Buffer[] = [];
  private headBytes = 0;
  private z: Transform | null = null;
  private consumed: Promise<void> | null = null;
  // The first error of the decompressor or of `out`; `truncated` when the stream ended early.
  failure: unknown = null;
  truncated = false;

  constructor(
    private readonly what: string,
    private readonly out: (chunk: Buffer) => Promise<void>,
    private readonly windowLogMax = 27,
    // Only zstd with this dictionary (a static patch's bases) when given.
    private readonly dictionary?: Buffer,
  ) {}

  // Takes the next compressed bytes; throws once decompressing or `out` failed.
  async write(chunk: Uint8Array): Promise<void> {
    this.check();
    if (!this.z) {
      this.head.push(Buffer.from(chunk));
      this.headBytes += chunk.length;
      if (!this.start(false)) return;
      const first = Buffer.concat(this.head);
      this.head = [];
      return this.feed(first);
    }
    return this.feed(Buffer.from(chunk));
  }

  // Ends the input and waits until every decompressed byte went to `out`.
  async end(): Promise<void> {
    this.check();
    if (!this.z && !this.start(true)) throw new StewardError('INTEGRITY_MISMATCH', `${this.what} is empty`);
    if (this.head.length > 0) {
      const first = Buffer.concat(this.head);
      this.head = [];
      await this.feed(first);
    }
    (this.z as Transform).end();
    await this.consumed;
    this.check();
  }

  // Ends the decompressor and waits until no `out` call is running or will run: after a failure or
  // a cut, so that nothing `out` opens or writes comes after the caller's clean-up.
  async stop(): Promise<void> {
    this.z?.destroy();
    await this.consumed;
  }

  // Makes the decompressor once the magic is in hand: false while more bytes are needed.
  private start(ended: boolean): boolean {
    const c = compressionOf(Buffer.concat(this.head));
    if (c === 'short' && !ended) return false;
    if (c !== 'gzip' && c !== 'zstd') throw new StewardError('INTEGRITY_MISMATCH', `${this.what} is neither gzip nor zstd`);
    if (this.dictionary && c !== 'zstd') throw new StewardError('INTEGRITY_MISMATCH', `${this.what} is not zstd`);
    const z = createDecompressor(c, this.what, this.windowLogMax, this.dictionary);
    this.z = z;
    this.consumed = (async () => {
      for await (const c2 of z as AsyncIterable<Buffer>) await this.out(c2);
    })().catch((err: unknown) => {
      this.failure ??= err;
      z.destroy();
    });
    return true;
  }

  private async feed(b: Buffer): Promise<void> {
    const z = this.z as Transform;
    if (!z.write(b)) await drained(z);
    this.check();
  }

  private check(): void {
    const err = this.failure;
    if (err === null) return;
    if (err instanceof StewardError) throw err;
    const e = err as { code?: string; message?: string };
    if (typeof e.code === 'string' && (e.code.startsWith('Z_') || e.code.startsWith('ZSTD_') || e.code === 'ERR_ZLIB_BINDING_CLOSED')) {
      // zlib's "unexpected end of file" is a stream cut short; anything else is other bytes.
      this.truncated = /unexpected end of file/i.test(e.message ?? '') || e.code === 'Z_BUF_ERROR';
      // A frame whose window passes the cap is a bomb, not a damaged stream.
      if (/windowTooLarge|too much memory/i.test(`${e.code} ${e.message}`)) throw new StewardError('UNSAFE_ARCHIVE', `${this.what} needs a window past 2^${this.windowLogMax} bytes (${e.message})`);
      throw new StewardError('INTEGRITY_MISMATCH', `${this.what} does not decompress: ${e.message}`);
    }
    throw err;
  }
}
