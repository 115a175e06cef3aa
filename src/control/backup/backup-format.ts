// The steward-control backup file (docs/control-plane.md, "Backup and restore"), one format for
// both backends: gzip of UTF-8 lines, each one JSON value, in this order:
//   {"format":"steward-control-backup","formatVersion":2,"schemaVersion":5,"takenAt":<ms>,"source":"sqlite","stewardVersion":"0.1.0","keyId":"<16 hex>"}
//   per table: {"table":"nodes","columns":["nodeId",...]}, one JSON array per row, {"tableEnd":"nodes","rows":2}
//   {"sequence":"runs","value":7}        the highest id the table's generated column handed out
//   per kept tarball: {"artifact":{"app","version","size","integrity"}}, then {"chunk":"<base64>"}
//                     lines holding exactly `size` bytes
//   {"end":true,"lines":<lines before this one>,"sha256":"<hex over those lines, newlines included>","signature":"<base64>"}
// The signature is the backup key's Ed25519 signature over signedEnd() (docs/control-plane.md,
// "The backup key"): a file is a backup only when the key restore is given signed it, so an
// edit with its digest recomputed is refused. A file without its end line, with a line out of
// place, whose digest or signature differs, or that goes on after its end line is not a backup.
import * as z from '../../core/zod-mini.js';
import { isAppName, isVersion } from '../../core/names.js';
import type { Scalar, SequenceMark, TableShape } from '../store/bulk.js';

export const BACKUP_FORMAT = 'steward-control-backup';
// 1: unsigned (before issue 31); 2: signed by the backup key.
export const BACKUP_FORMAT_VERSION = 2;
// The longest line a reader takes: a chunk line (CHUNK_BYTES in base64), or a row, whose longest
// column (a node's apps, from a heartbeat body of at most 1 MiB) is MAX_FIELD_CHARS.
export const MAX_LINE_BYTES = 2 * 1024 * 1024;
// Rows go to the database in batches of at most this many rows and this many bytes of lines, so
// that what a restore holds in memory is bounded whatever the file holds.
export const ROW_BATCH = 500;
export const ROW_BATCH_BYTES = 4 * 1024 * 1024;
// Bytes of a tarball per chunk line.
export const CHUNK_BYTES = 512 * 1024;

const int = z.number().check(z.int(), z.minimum(0), z.maximum(Number.MAX_SAFE_INTEGER));
const tableName = z.string().check(z.regex(/^[a-z][a-z0-9_]{0,62}$/));
const columnName = z.string().check(z.regex(/^[A-Za-z][A-Za-z0-9_]{0,62}$/));

export const headerSchema = z.strictObject({
  format: z.literal(BACKUP_FORMAT),
  formatVersion: z.literal(BACKUP_FORMAT_VERSION),
  schemaVersion: int.check(z.minimum(1)),
  takenAt: int,
  source: z.enum(['sqlite', 'postgres']),
  stewardVersion: z.string().check(z.maxLength(64)),
  // The backup key's id (the first 16 hex of sha256 of its raw public key).
  keyId: z.string().check(z.regex(/^[0-9a-f]{16}$/)),
});
export type BackupHeader = z.infer<typeof headerSchema>;

export const tableSchema = z.strictObject({ table: tableName, columns: z.array(columnName).check(z.minLength(1), z.maxLength(200)) });
export const tableEndSchema = z.strictObject({ tableEnd: tableName, rows: int });
export const sequenceSchema = z.strictObject({ sequence: tableName, value: int });
export const artifactMetaSchema = z.strictObject({
  app: z.string().check(z.refine(isAppName, 'not an app name')),
  version: z.string().check(z.refine(isVersion, 'not a version')),
  size: int.check(z.minimum(1)),
  integrity: z.string().check(z.regex(/^sha512-[A-Za-z0-9+/]{86}==$/)),
});
export type ArtifactMeta = z.infer<typeof artifactMetaSchema>;
export const artifactSchema = z.strictObject({ artifact: artifactMetaSchema });
export const chunkSchema = z.strictObject({ chunk: z.string().check(z.regex(/^[A-Za-z0-9+/]*={0,2}$/)) });
export const endSchema = z.strictObject({ end: z.literal(true), lines: int, sha256: z.string().check(z.regex(/^[0-9a-f]{64}$/)), signature: z.string().check(z.regex(/^[A-Za-z0-9+/]{86}==$/)) });

// The bytes the backup key signs: the domain, then the end line's count and digest (the digest
// covers every line before the end line, the header with its keyId among them).
export function signedEnd(lines: number, sha256: string): Buffer {
  return Buffer.from(`steward-control-backup-v2\n${lines}\n${sha256}`, 'utf8');
}

// A row's values: the stored scalars only.
export function isRow(v: unknown, columns: number): v is Scalar[] {
  return Array.isArray(v) && v.length === columns && v.every((x) => x === null || typeof x === 'string' || typeof x === 'boolean' || (typeof x === 'number' && Number.isSafeInteger(x)));
}

// What a backup holds, as backup writes it and restore reads it (and copy passes from one store
// to the other without a file). An artifact's bytes must be read to their end before the next
// event is asked for.
export type DumpEvent =
  | { kind: 'table'; table: TableShape }
  | { kind: 'rows'; rows: Scalar[][] }
  | { kind: 'tableEnd'; table: string; rows: number }
  | { kind: 'sequence'; mark: SequenceMark }
  | { kind: 'artifact'; artifact: ArtifactMeta; bytes: AsyncIterable<Buffer> };
