// Backup files (src/control/backup/backup-format.ts) taken apart and put together again, for
// tests that make one another way than `steward-control backup` would: edited, hostile, or
// with its end line recomputed and signed again by the backup key, so that only what the test
// changed is wrong. And the backup key the tests sign with.
import { createHash, sign } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { signedEnd } from '../../src/control/backup/backup-format.js';
import { generateKeyPair, parsePrivateKey } from '../../src/platform/keys.js';

export interface BackupKeyFiles {
  // The private half (`backup --key`, or `restore --key`), the public half (`restore --key`).
  key: string;
  pub: string;
  keyId: string;
}

let shared: BackupKeyFiles | null = null;

// A fresh backup key pair in its own folder.
export function newBackupKey(): BackupKeyFiles {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-backup-key-'));
  const kp = generateKeyPair();
  const key = path.join(dir, 'backup.key');
  const pub = path.join(dir, 'backup.pub');
  writeFileSync(key, kp.privatePem, { mode: 0o600 });
  writeFileSync(pub, kp.publicPem);
  return { key, pub, keyId: kp.keyId };
}

// The backup key the tests of this process sign and restore with.
export function testBackupKey(): BackupKeyFiles {
  return (shared ??= newBackupKey());
}

// The lines of a backup file, its end line included, each parsed.
export function readBackupLines(file: string): unknown[] {
  return gunzipSync(readFileSync(file))
    .toString('utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as unknown);
}

// The end line `lines` (without an end line) get, signed by the private key in `keyFile`.
export function endLineOf(lines: unknown[], keyFile: string = testBackupKey().key): string {
  const body = lines.map((l) => JSON.stringify(l) + '\n').join('');
  const sha256 = createHash('sha256').update(body).digest('hex');
  const signature = sign(null, signedEnd(lines.length, sha256), parsePrivateKey(readFileSync(keyFile))).toString('base64');
  return body + JSON.stringify({ end: true, lines: lines.length, sha256, signature }) + '\n';
}

// Writes `lines` (without an end line) as a backup file with a correct end line, signed by the
// private key in `keyFile` (the tests' backup key by default).
export function writeBackupLines(file: string, lines: unknown[], keyFile?: string): void {
  writeFileSync(file, gzipSync(Buffer.from(endLineOf(lines, keyFile))));
}

// The lines of a backup file without its end line.
export function backupBody(file: string): unknown[] {
  return readBackupLines(file).filter((l) => !(l !== null && typeof l === 'object' && 'end' in l));
}
