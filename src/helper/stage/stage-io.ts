import type { TreeEntry } from '../../core/tree-listing.js';
import type { ExtractLimits, FetchSettings } from '../../core/config-schema.js';
import type { Readable } from 'node:stream';
import type { ControlPlaneCa } from '../../platform/fetch-trust.js';
import type { FetchAuth } from '../../platform/download-auth.js';
import type { TrustScope } from '../../platform/trusted-file.js';

export interface BytesResult {
  bytes: number;
  integrity: string;
}

// The bytes themselves, for an archive held in memory (at most ARCHIVE_IN_MEMORY_MAX_BYTES).
export interface BytesInMemory extends BytesResult {
  archive: Buffer;
}

export interface ExtractResultLike {
  entries: number;
  bytes: number;
  treeDigest: string;
  // Every entry of the tree (platform/tree-walk.ts): its files become objects (docs/design.md §20).
  listing: TreeEntry[];
  // The SRI sha512 of the archive bytes the extraction read from archivePath; null when the
  // archive was given in memory or streamed to it, whose sender hashed it.
  integrity: string | null;
}

// Where the extraction that overlaps a fetch takes its bytes (platform/tarball.ts).
export interface StreamedExtractionLike {
  write(chunk: Uint8Array): Promise<void>;
  end(): void;
  readonly result: Promise<ExtractResultLike>;
  abort(): Promise<void>;
}

// What an extraction is given beside its bytes.
export type ExtractJob = {
  dest: string;
  // Where the tree is renamed to: entries must fit PATH_MAX there too.
  finalDir?: string;
  limits: ExtractLimits;
  onProgress?: (p: { entries: number; bytes: number }) => void;
};

// The side effects of staging, one adapter each, so that tests and the fault seam can
// replace them. Every method removes what it created when it fails.
export interface StageIO {
  // Downloads `url` into `destFile` (created exclusively), hashing while streaming.
  fetchToFile(opts: {
    url: string;
    destFile: string;
    maxBytes: number;
    settings: FetchSettings;
    caFile?: string;
    // When set, the CA file must pass the trust rule (platform/trusted-file.ts).
    caTrust?: TrustScope;
    // The control plane's URLs and CA file: a URL on its origin is verified against its CA too.
    controlPlane?: ControlPlaneCa;
    allowFile?: boolean;
    signal?: AbortSignal;
    onProgress?: (bytes: number, total: number) => void;
    auth?: FetchAuth;
    atMost?: boolean;
    acceptEncoding?: string;
  }): Promise<BytesResult>;
  // Downloads an http(s) `url` as fetchToFile does (a POST of `body` when given), handing the bytes to `sink` as they arrive
  // (hashed before the sink sees them) instead of writing a file.
  fetchInto(
    opts: { url: string; maxBytes: number; settings: FetchSettings; caFile?: string; caTrust?: TrustScope; controlPlane?: ControlPlaneCa; signal?: AbortSignal; onProgress?: (bytes: number, total: number) => void; auth?: FetchAuth; body?: Buffer; atMost?: boolean; acceptEncoding?: string; rangeStart?: number },
    sink: (chunk: Uint8Array) => Promise<void>,
  ): Promise<BytesResult>;
  // Copies a local regular file (opened with O_NOFOLLOW) into `destFile`, hashing it.
  copyLocalToFile(opts: { path: string; destFile: string; maxBytes: number; onProgress?: (bytes: number, total: number) => void }): Promise<BytesResult>;
  // Writes exactly `expectedBytes` of an upload into `destFile`, hashing it.
  streamToFile(opts: { stream: Readable; destFile: string; expectedBytes: number; onProgress?: (bytes: number, total: number) => void }): Promise<BytesResult>;
  // The same two into one Buffer of `maxBytes` / `expectedBytes` (owning its ArrayBuffer, so
  // that it can be transferred to the extractor), with the same refusals; no file.
  copyLocalToMemory(opts: { path: string; maxBytes: number; onProgress?: (bytes: number, total: number) => void }): Promise<BytesInMemory>;
  streamToMemory(opts: { stream: Readable; expectedBytes: number; onProgress?: (bytes: number, total: number) => void }): Promise<BytesInMemory>;
  // Starts an extractor ahead of its job (its start-up overlaps obtaining the bytes). Its
  // extract() safely extracts a .tar.gz into `dest` (must not exist) and leaves it read-only:
  // from `archivePath`, hashing what it reads, or from `archive`, which it takes over (the
  // Buffer is detached, the caller must not use it again); cancel() ends it (and waits) if
  // extract() was never called. extractStream() is the same extraction fed the bytes as they
  // arrive (`what` names them, `size` is their declared size).
  prepareExtraction(): {
    extract(opts: ({ archivePath: string; archive?: never } | { archive: Buffer; archivePath?: never }) & ExtractJob): Promise<ExtractResultLike>;
    extractStream(opts: ExtractJob & { what: string; size: number }): StreamedExtractionLike;
    cancel(): Promise<void>;
  };
  // Throws DISK_FULL unless `needBytes` plus `reserveBytes` are free on the file system of `dir`.
  ensureFreeSpace(dir: string, needBytes: number, reserveBytes: number): Promise<void>;
  // Makes every write on the file system of `dir` durable (syncfs).
  syncFileSystem(dir: string): Promise<void>;
}
