// Backup files (src/control/backup/backup-format.ts) taken apart and put together again, for
// tests that make one another way than `steward-control backup` would: edited, hostile, or
// with its end line recomputed so that only what the test changed is wrong.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { gunzipSync, gzipSync } from 'node:zlib';

// The lines of a backup file, its end line included, each parsed.
export function readBackupLines(file: string): unknown[] {
  return gunzipSync(readFileSync(file))
    .toString('utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as unknown);
}

// Writes `lines` (without an end line) as a backup file with a correct end line.
export function writeBackupLines(file: string, lines: unknown[]): void {
  const body = lines.map((l) => JSON.stringify(l) + '\n').join('');
  const end = { end: true, lines: lines.length, sha256: createHash('sha256').update(body).digest('hex') };
  writeFileSync(file, gzipSync(Buffer.from(body + JSON.stringify(end) + '\n')));
}

// The lines of a backup file without its end line.
export function backupBody(file: string): unknown[] {
  return readBackupLines(file).filter((l) => !(l !== null && typeof l === 'object' && 'end' in l));
}
