// Writes a backup file (backup-format.ts) the way every steward file that matters is written:
// into a fresh 0600 temp file beside the target, fsynced, then given the target's name, and the
// folder fsynced. Nothing is ever half-written under the name; an existing file is kept unless
// `force` (and then replaced only by a complete backup).
import { createHash, randomBytes, sign } from 'node:crypto';
import { constants as fsc, existsSync, promises as fsp } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { StewardError } from '../../core/errors.js';
import { fsyncDir } from '../../platform/fs-atomic.js';
import { CHUNK_BYTES, signedEnd, type BackupHeader, type DumpEvent } from './backup-format.js';
import type { BackupKey } from './backup-key.js';

export interface WrittenBackup {
  // The file's size in bytes (compressed).
  bytes: number;
}

// Refuses an existing `out` unless `force` (OUTPUT_EXISTS): checked first, and again when the
// complete backup takes the name.
export function refuseExistingOutput(out: string, force: boolean): void {
  if (!force && existsSync(out)) throw outputExists(out);
}

// Writes `header` and every event of `events` to `out`, signed by `opts.key`.
export async function writeBackupFile(out: string, header: BackupHeader, events: AsyncIterable<DumpEvent>, opts: { force: boolean; key: BackupKey }): Promise<WrittenBackup> {
  refuseExistingOutput(out, opts.force);
  const dir = path.dirname(path.resolve(out));
  const tmp = path.join(dir, `.${path.basename(out)}.${randomBytes(6).toString('hex')}.tmp`);
  const fh = await fsp.open(tmp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600);
  let placed = false;
  try {
    await fh.chmod(0o600);
    await pipeline(Readable.from(backupLines(header, events, opts.key)), createGzip(), async (gzipped: AsyncIterable<Buffer>) => {
      for await (const chunk of gzipped) await fh.write(chunk);
    });
    // The bytes must be on disk before the name makes them the backup.
    await fh.sync();
    const { size } = await fh.stat();
    await fh.close();
    if (opts.force) {
      await fsp.rename(tmp, out);
    } else {
      // Why link, not rename: rename would replace a file that appeared at `out` meanwhile.
      await fsp.link(tmp, out).catch((err: NodeJS.ErrnoException) => {
        throw err.code === 'EEXIST' ? outputExists(out) : err;
      });
      await fsp.rm(tmp, { force: true });
    }
    placed = true;
    await fsyncDir(dir);
    return { bytes: size };
  } finally {
    if (!placed) {
      await fh.close().catch(() => undefined);
      await fsp.rm(tmp, { force: true });
    }
  }
}

// The file's lines (before gzip), ending with the digest of all before it and its signature.
async function* backupLines(header: BackupHeader, events: AsyncIterable<DumpEvent>, key: BackupKey): AsyncGenerator<Buffer> {
  const hash = createHash('sha256');
  let lines = 0;
  const line = (v: unknown): Buffer => {
    const b = Buffer.from(JSON.stringify(v) + '\n', 'utf8');
    hash.update(b);
    lines++;
    return b;
  };
  yield line(header);
  for await (const e of events) {
    switch (e.kind) {
      case 'table':
        yield line({ table: e.table.name, columns: e.table.columns });
        break;
      case 'rows':
        // One write for the batch: a line each, joined.
        yield Buffer.concat(e.rows.map(line));
        break;
      case 'tableEnd':
        yield line({ tableEnd: e.table, rows: e.rows });
        break;
      case 'sequence':
        yield line({ sequence: e.mark.table, value: e.mark.value });
        break;
      case 'artifact':
        yield line({ artifact: e.artifact });
        for await (const bytes of e.bytes) {
          for (let i = 0; i < bytes.length; i += CHUNK_BYTES) yield line({ chunk: bytes.subarray(i, i + CHUNK_BYTES).toString('base64') });
        }
        break;
    }
  }
  const sha256 = hash.digest('hex');
  const signature = sign(null, signedEnd(lines, sha256), key.key).toString('base64');
  yield Buffer.from(JSON.stringify({ end: true, lines, sha256, signature }) + '\n', 'utf8');
}

function outputExists(out: string): StewardError {
  return new StewardError('OUTPUT_EXISTS', `${out} exists; pick another --out, or pass --force to replace it once the new backup is complete`);
}
