// Reads a backup file (backup-format.ts) as events, checking everything on the way: the gzip
// stream, each line's shape, size and place, each row's values against its columns
// (backup-rows.ts), each tarball's size and integrity, and at the end the line count, digest
// and the backup key's signature. Whatever is wrong throws BACKUP_INVALID naming the file and
// line; the events read before it must be undone by the caller (a restore rolls back). What it
// holds in memory is bounded by MAX_LINE_BYTES and ROW_BATCH_BYTES, whatever the file's size.
import { createHash, verify } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { createGunzip } from 'node:zlib';
import { StewardError } from '../../core/errors.js';
import type { Scalar } from '../store/bulk.js';
import {
  artifactSchema,
  chunkSchema,
  endSchema,
  headerSchema,
  isRow,
  MAX_LINE_BYTES,
  ROW_BATCH,
  ROW_BATCH_BYTES,
  sequenceSchema,
  signedEnd,
  tableEndSchema,
  tableSchema,
  type BackupHeader,
  type DumpEvent,
} from './backup-format.js';
import type { BackupKey } from './backup-key.js';
import { rowChecks, rowProblem } from './backup-rows.js';
import { checkedBytes } from './checked-bytes.js';

// How the end line begins; no other line does (rows are arrays, other lines other keys).
const END_LINE = '{"end":';

function startsWith(line: Buffer, prefix: string): boolean {
  return line.subarray(0, prefix.length).toString('latin1') === prefix;
}

export interface OpenedBackup {
  header: BackupHeader;
  // Every event after the header; throws BACKUP_INVALID where the file stops being a backup.
  events: AsyncGenerator<DumpEvent>;
  // Stops reading (the events were not read to their end). Idempotent.
  close(): void;
}

// Opens `file` and reads its header line; the events check the file against `key`.
export async function openBackupFile(file: string, key: BackupKey): Promise<OpenedBackup> {
  const reader = new LineReader(file);
  try {
    const first = await reader.next();
    if (first === null) throw reader.invalid('it is empty');
    const v = reader.json(first) as { format?: unknown; formatVersion?: unknown } | null;
    if (v !== null && typeof v === 'object' && v.format === 'steward-control-backup' && v.formatVersion === 1) {
      throw reader.invalid('it is an unsigned backup (format version 1, taken by a steward-control before backups were signed), which cannot be told from an altered one: restore it with the steward-control that took it, then take a signed backup (`backup --key`)');
    }
    const header = reader.parse(first, headerSchema, 'a steward-control backup header');
    if (header.keyId !== key.keyId) throw reader.invalid(`it was signed by the backup key ${header.keyId}, not by ${key.keyId} (${key.file}): restore it with the backup key that signed it`);
    return { header, events: eventsOf(reader, key), close: () => reader.close() };
  } catch (err) {
    reader.close();
    throw err;
  }
}

async function* eventsOf(r: LineReader, key: BackupKey): AsyncGenerator<DumpEvent> {
  try {
    let line = await r.nextOrFail();
    // Tables, each with its rows.
    while (startsWith(line, '{"table":')) {
      const t = r.parse(line, tableSchema, 'a table line');
      if (new Set(t.columns).size !== t.columns.length) throw r.invalid(`table ${t.table} names a column twice`);
      const checks = rowChecks(t.table, t.columns);
      if (typeof checks === 'string') throw r.invalid(checks);
      yield { kind: 'table', table: { name: t.table, columns: t.columns } };
      let count = 0;
      let batch: Scalar[][] = [];
      let batchBytes = 0;
      for (;;) {
        line = await r.nextOrFail();
        const v = r.json(line);
        if (!Array.isArray(v)) break;
        if (!isRow(v, t.columns.length)) throw r.invalid(`row ${count + 1} of table ${t.table} is not ${t.columns.length} stored values`);
        const why = rowProblem(checks, t.columns, v);
        if (why !== null) throw r.invalid(`row ${count + 1} of table ${t.table}: ${why}`);
        batch.push(v);
        batchBytes += line.length;
        count++;
        if (batch.length >= ROW_BATCH || batchBytes >= ROW_BATCH_BYTES) {
          yield { kind: 'rows', rows: batch };
          batch = [];
          batchBytes = 0;
        }
      }
      if (batch.length > 0) yield { kind: 'rows', rows: batch };
      const end = r.parse(line, tableEndSchema, `the end of table ${t.table}`);
      if (end.tableEnd !== t.table || end.rows !== count) throw r.invalid(`table ${t.table} ends as ${end.tableEnd} with ${end.rows} rows, but ${count} were read`);
      yield { kind: 'tableEnd', table: t.table, rows: count };
      line = await r.nextOrFail();
    }
    while (startsWith(line, '{"sequence":')) {
      const s = r.parse(line, sequenceSchema, 'a sequence line');
      yield { kind: 'sequence', mark: { table: s.sequence, value: s.value } };
      line = await r.nextOrFail();
    }
    while (!startsWith(line, END_LINE)) {
      const { artifact } = r.parse(line, artifactSchema, 'a tarball line');
      let left = artifact.size;
      async function* chunks(): AsyncGenerator<Buffer> {
        while (left > 0) {
          const b = Buffer.from(r.parse(await r.nextOrFail(), chunkSchema, `a chunk of ${artifact.app} ${artifact.version}`).chunk, 'base64');
          left -= b.length;
          yield b;
        }
      }
      const bytes = checkedBytes(chunks(), artifact, (reason) => r.invalid(`the tarball of ${artifact.app} ${artifact.version} holds ${reason}`));
      yield { kind: 'artifact', artifact, bytes };
      // A consumer that did not read the bytes to their end: they are still checked.
      for await (const _ of bytes) void _;
      line = await r.nextOrFail();
    }
    const end = r.parse(line, endSchema, 'the end line');
    const digest = r.digest();
    if (end.lines !== r.hashed || end.sha256 !== digest) throw r.invalid(`its end line names ${end.lines} lines with sha256 ${end.sha256}, but ${r.hashed} lines with sha256 ${digest} came before it`);
    if (!verify(null, signedEnd(end.lines, end.sha256), key.key, Buffer.from(end.signature, 'base64'))) {
      throw r.invalid(`its signature is not the backup key ${key.keyId}'s: the file was altered after it was taken, or signed by another key`);
    }
    if ((await r.next()) !== null) throw r.invalid('it goes on after its end line (two backups in one file?)');
  } finally {
    r.close();
  }
}

// The file's lines, one at a time, with a running sha256 of every line but the end line.
class LineReader {
  private readonly gunzip = createGunzip();
  private readonly input: ReturnType<typeof createReadStream>;
  private readonly chunks: AsyncIterator<Buffer>;
  // The pieces of the line being read, and what came after the last newline.
  private parts: Buffer[] = [];
  private partsBytes = 0;
  private rest: Buffer = Buffer.alloc(0);
  private eof = false;
  private lineNo = 0;
  private readonly hash = createHash('sha256');
  private hashDone: string | null = null;
  hashed = 0;

  constructor(readonly file: string) {
    const input = (this.input = createReadStream(file));
    input.on('error', (err) => this.gunzip.destroy(err));
    input.pipe(this.gunzip);
    this.chunks = this.gunzip[Symbol.asyncIterator]();
  }

  invalid(reason: string, cause?: unknown): StewardError {
    return new StewardError('BACKUP_INVALID', `${this.file} is not a complete steward-control backup${this.lineNo > 0 ? ` (line ${this.lineNo})` : ''}: ${reason}`, cause === undefined ? {} : { cause });
  }

  // The next line without its newline, or null at the end of the file.
  async next(): Promise<Buffer | null> {
    for (;;) {
      const nl = this.rest.indexOf(0x0a);
      if (nl >= 0) {
        const tail = this.rest.subarray(0, nl);
        const line = this.parts.length === 0 ? tail : Buffer.concat([...this.parts, tail]);
        this.parts = [];
        this.partsBytes = 0;
        this.rest = this.rest.subarray(nl + 1);
        this.lineNo++;
        if (line.length > MAX_LINE_BYTES) throw this.invalid(`a line longer than ${MAX_LINE_BYTES} bytes`);
        // Lines after the digest was taken (a file that goes on past its end line) are refused
        // by the caller, not hashed.
        if (this.hashDone === null && !startsWith(line, END_LINE)) {
          this.hash.update(line);
          this.hash.update('\n');
          this.hashed++;
        }
        return line;
      }
      if (this.rest.length > 0) {
        this.parts.push(this.rest);
        this.partsBytes += this.rest.length;
        this.rest = Buffer.alloc(0);
      }
      if (this.partsBytes > MAX_LINE_BYTES) throw this.invalid(`a line longer than ${MAX_LINE_BYTES} bytes`);
      if (this.eof) {
        if (this.partsBytes > 0) throw this.invalid('its last line is cut short');
        return null;
      }
      let got: IteratorResult<Buffer>;
      try {
        got = await this.chunks.next();
      } catch (err) {
        const e = err as NodeJS.ErrnoException;
        if (e.code === 'ENOENT' || e.code === 'EACCES' || e.code === 'EISDIR') throw new StewardError('NOT_FOUND', `cannot read the backup ${this.file}: ${e.message}`, { cause: err });
        throw this.invalid(`its gzip stream is broken (${e.message}): truncated or corrupt`, err);
      }
      if (got.done) this.eof = true;
      else this.rest = got.value;
    }
  }

  async nextOrFail(): Promise<Buffer> {
    const line = await this.next();
    if (line === null) throw this.invalid('it ends before its end line (truncated)');
    return line;
  }

  json(line: Buffer): unknown {
    try {
      return JSON.parse(line.toString('utf8'));
    } catch (err) {
      throw this.invalid('a line that is not JSON', err);
    }
  }

  parse<T>(line: Buffer, schema: { safeParse(v: unknown): { success: true; data: T } | { success: false } }, what: string): T {
    const r = schema.safeParse(this.json(line));
    if (!r.success) throw this.invalid(`a line where ${what} belongs`);
    return r.data;
  }

  digest(): string {
    return (this.hashDone ??= this.hash.digest('hex'));
  }

  close(): void {
    this.input.destroy();
    this.gunzip.destroy();
  }
}
