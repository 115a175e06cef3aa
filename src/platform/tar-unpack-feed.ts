import { Parser, type ReadEntry } from 'tar';
import type { ExtractLimits } from '../core/config-schema.js';
import { StewardError } from '../core/errors.js';
import { EntryRules, unsafeMessage } from './tar-entry-rules.js';
import { TarScanner } from './tar-scan.js';
import { TarTreeWriter, type WrittenEntry } from './tar-tree-writer.js';

function unsafe(message: string, cause?: unknown): StewardError {
  return new StewardError('UNSAFE_ARCHIVE', message, cause === undefined ? {} : { cause });
}

// Maps what node-tar emits: a file system error is ours (IO_ERROR, DISK_FULL), anything
// else (TAR_ENTRY_ERROR, TAR_BAD_ARCHIVE, TAR_SYMLINK_ERROR, ...) is the archive's fault.
function fromTarError(err: unknown): StewardError {
  // node-tar puts the entry, or for a header it refused the header, on its error.
  const e = err as NodeJS.ErrnoException & { entry?: { path?: string }; header?: { path?: string } };
  if (e?.code === 'ENOSPC' || e?.code === 'EDQUOT') {
    return new StewardError('DISK_FULL', 'extracting the archive: no space left on device', { cause: err });
  }
  const tarCode = typeof e?.code === 'string' && e.code.startsWith('TAR_');
  if (!tarCode && typeof e?.syscall === 'string') {
    return new StewardError('IO_ERROR', `extracting the archive: ${e.message}`, { cause: err });
  }
  const message = e instanceof Error ? e.message : String(err);
  return unsafe(unsafeMessage(e?.entry?.path ?? e?.header?.path ?? null, `node-tar refused it: ${message}`), err);
}

// Feeds decompressed tar bytes to our scanner first, then to node-tar's Parser whose
// filter applies our entry rules; only entries they let through reach TarTreeWriter. The first failure is kept,
// every later entry is skipped, and feed() throws it so the caller stops reading.
// Also enforces the decompressed-size caps (gzip bomb) before any more bytes reach node-tar.
export class UnpackFeed {
  // The first failure; pipeline() may report its own AbortError instead once the sink throws.
  failure: StewardError | null = null;
  private decompressed = 0;
  private finished = false;
  private readonly scanner = new TarScanner();
  private readonly rules: EntryRules;
  private readonly unpack: Parser;
  private readonly writer: TarTreeWriter;
  // Symlinks are made by us after every file is written (see createSymlinks).
  private readonly symlinks: Array<{ path: string; target: string }> = [];

  // `prefixBytes`: see EntryRules (the longest folder the tree will live in, with its '/').
  constructor(
    dest: string,
    private readonly limits: ExtractLimits,
    private readonly compressedSize: number,
    prefixBytes = 0,
  ) {
    this.rules = new EntryRules(limits, prefixBytes);
    this.writer = new TarTreeWriter(dest, (err) => this.fail(err instanceof StewardError ? err : fromTarError(err)));
    // Parsing only: owners are never applied (everything is ours), nothing is unlinked or
    // followed; what is written, and how, is TarTreeWriter's.
    this.unpack = new Parser({
      strict: true,
      // The bytes are already gunzipped: never let node-tar sniff and decompress a nested stream.
      brotli: false,
      zstd: false,
      filter: (_path, entry) => this.filter(entry as ReadEntry),
      onwarn: (code, message) => this.fail(unsafe(unsafeMessage(null, `node-tar warned ${code}: ${message}`))),
    });
    this.unpack.on('entry', (entry: ReadEntry) => this.writer.write(entry));
    this.unpack.on('error', (err: unknown) => this.fail(fromTarError(err)));
    this.unpack.on('finish', () => (this.finished = true));
  }

  // Every entry written, as the tree walk must find it (valid once finish() returned).
  get written(): ReadonlyMap<string, WrittenEntry> {
    return this.writer.written;
  }

  get progress(): { entries: number; bytes: number } {
    return { entries: this.rules.entries, bytes: this.rules.declaredBytes };
  }

  feed(chunk: Buffer): void {
    this.throwIfFailed();
    this.decompressed += chunk.length;
    if (this.decompressed > this.limits.maxBytes) {
      this.fail(unsafe(unsafeMessage(null, `it decompresses to more than ${this.limits.maxBytes} bytes`)));
    } else if (this.decompressed > this.limits.maxRatio * this.compressedSize) {
      this.fail(unsafe(unsafeMessage(null, `it decompresses to more than ${this.limits.maxRatio} times its size (gzip bomb)`)));
    }
    this.throwIfFailed();
    const rule = this.scanner.write(chunk);
    if (rule) this.fail(unsafe(rule));
    this.throwIfFailed();
    try {
      this.unpack.write(chunk);
    } catch (err) {
      this.fail(fromTarError(err));
    }
    this.throwIfFailed();
  }

  // Ends the stream: refuses a truncated archive and a disagreement between scanner and node-tar.
  finish(): void {
    this.throwIfFailed();
    const rule = this.scanner.end();
    if (rule) this.fail(unsafe(rule));
    this.throwIfFailed();
    try {
      this.unpack.end();
    } catch (err) {
      this.fail(fromTarError(err));
    }
    this.throwIfFailed();
    if (!this.finished) this.fail(new StewardError('INTERNAL', 'node-tar did not finish a synchronous extraction'));
    this.throwIfFailed();
    this.createSymlinks();
    if (this.scanner.entries !== this.rules.entries) {
      const counts = `scanner ${this.scanner.entries}, node-tar ${this.rules.entries}`;
      this.fail(unsafe(unsafeMessage(null, `the tar headers are ambiguous (entry counts differ: ${counts})`)));
    }
    this.throwIfFailed();
  }

  private filter(entry: ReadEntry): boolean {
    if (this.failure) return false;
    const disagreement = this.disagreement(entry);
    if (disagreement) {
      this.fail(unsafe(disagreement));
      return false;
    }
    const v = this.rules.check(entry);
    if (v.verdict === 'refuse') {
      this.fail(unsafe(v.message));
      return false;
    }
    // Why: defense in depth; the tree walk chmods every entry to an exact mode anyway.
    if (typeof entry.mode === 'number') entry.mode &= 0o777;
    if (v.verdict === 'write' && entry.type === 'SymbolicLink') {
      this.symlinks.push({ path: entry.path, target: String(entry.linkpath) });
      return false;
    }
    return v.verdict === 'write';
  }

  // The scanner read every header first, as GNU tar does: node-tar must have read this entry
  // the same way (its path, size and link target), or the two extract different trees.
  private disagreement(entry: ReadEntry): string | null {
    const scanned = this.scanner.takeEntry();
    if (scanned === undefined) return unsafeMessage(entry.path, 'the tar headers are ambiguous (node-tar read an entry the scanner did not)');
    const linkish = scanned.type === '1' || scanned.type === '2';
    const differs =
      scanned.path !== entry.path ? `path ${JSON.stringify(scanned.path)}` :
      scanned.size !== entry.size ? `size ${scanned.size}` :
      linkish && scanned.linkpath !== entry.linkpath ? `link target ${JSON.stringify(scanned.linkpath)}` : null;
    return differs === null ? null : unsafeMessage(entry.path, `the tar headers are ambiguous (GNU tar would read its ${differs})`);
  }

  // Why symlinks are deferred: while files are written no symlink exists in the tree, so
  // nothing can be written through one whatever node-tar does; and node-tar refuses any
  // symlink whose target runs through another symlink (libfoo.so -> libfoo.so.1 -> ...),
  // which real releases have. Our rules already placed every symlink outside any other
  // symlink's path and inside the tree lexically; the tree walk then resolves each one.
  private createSymlinks(): void {
    for (const { path, target } of this.symlinks) {
      this.writer.writeSymlink(path, target);
      if (this.failure) return;
    }
  }

  private fail(err: StewardError): void {
    this.failure ??= err;
    this.writer.closeOpen();
  }

  private throwIfFailed(): void {
    if (this.failure) throw this.failure;
  }
}
