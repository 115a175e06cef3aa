// Backup files (src/control/backup/backup-format.ts) taken apart and put together again, for
// tests that make one another way than `steward-control backup` would: edited, hostile, or
// with its end line recomputed and signed again by the backup key, so that only what the test
// changed is wrong. And the backup key the tests sign with.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, sign } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { signedEnd } from '../../src/control/backup/backup-format.js';
import { isPostgresUrl } from '../../src/control/store/postgres/open-postgres-store.js';
import { generateKeyPair, parsePrivateKey } from '../../src/platform/keys.js';
import { REPO } from './host.js';
import { pgQuery } from './postgres.js';
import type { StoreBackend } from './store-backends.js';
import { scratchDir } from './scratch.js';

export interface BackupKeyFiles {
  // The private half (`backup --key`, or `restore --key`), the public half (`restore --key`).
  key: string;
  pub: string;
  keyId: string;
}

let shared: BackupKeyFiles | null = null;

// A fresh backup key pair in its own folder.
export function newBackupKey(): BackupKeyFiles {
  const dir = scratchDir('steward-backup-key-');
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

// A restore target of either backend and what it holds: the SQLite file's folder listing (a
// refused restore leaves no file there, temporary ones included), or a PostgreSQL database's tables.
export async function restoreTargetState(db: string): Promise<string[]> {
  if (isPostgresUrl(db)) return (await pgQuery(db, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1`)).rows.map((r) => r.table_name as string);
  return existsSync(path.dirname(db)) ? readdirSync(path.dirname(db)).sort() : [];
}

export interface RestoreRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  json: any;
}

// Runs `steward-control --db <db> --artifacts <artifacts> restore --key <keyFile> --from <file> --json`,
// with `nodeArgs` for node (a heap limit).
export function runRestore(db: string, artifacts: string, file: string, o: { keyFile?: string; nodeArgs?: string[] } = {}): Promise<RestoreRun> {
  const args = [...(o.nodeArgs ?? []), path.join(REPO, 'bin/steward-control.js'), '--db', db, '--artifacts', artifacts, 'restore', '--key', o.keyFile ?? testBackupKey().pub, '--from', file, '--json'];
  return new Promise((resolve) => {
    execFile(process.execPath, args, { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      let json: unknown;
      try {
        json = JSON.parse(stdout);
      } catch {
        /* not JSON */
      }
      const e = error as (Error & { code?: unknown; signal?: NodeJS.Signals | null }) | null;
      resolve({ code: e ? (typeof e.code === 'number' ? e.code : null) : 0, signal: e?.signal ?? null, stdout, stderr, json });
    });
  });
}

// Restores `file` into a fresh empty target of `backend` and expects BACKUP_INVALID (exit 1)
// with a message matching `message`, the target as it was (no temporary file beside a SQLite
// target), and no tarball in the tarball folder.
export async function restoreRefusedInvalid(backend: StoreBackend, file: string, message: RegExp, o: { keyFile?: string; nodeArgs?: string[] } = {}): Promise<RestoreRun> {
  const db = await backend.emptyTarget();
  const artifacts = path.join(scratchDir('steward-restore-artifacts-'), 'artifacts');
  const before = await restoreTargetState(db);
  const r = await runRestore(db, artifacts, file, o);
  assert.equal(r.code, 1, `exit ${r.code} signal ${r.signal}: ${r.stdout}${r.stderr.slice(-2000)}`);
  assert.equal(r.json?.error?.code, 'BACKUP_INVALID', r.stdout);
  assert.match(r.json.error.message, message);
  assert.deepEqual(await restoreTargetState(db), before, 'the target is as it was, with no temporary file beside it');
  const files = existsSync(artifacts) ? readdirSync(artifacts, { recursive: true, withFileTypes: true }).filter((e) => !e.isDirectory()).map((e) => e.name) : [];
  assert.deepEqual(files, [], 'no tarball and no temporary file in the tarball folder');
  return r;
}

// `lines` (a backup's body) with `rows` added to table `table`, its end count raised to match.
export function withRows(lines: unknown[], table: string, rows: unknown[][]): unknown[] {
  const out: unknown[] = [];
  for (const l of lines) {
    const end = l as { tableEnd?: string; rows?: number };
    if (end.tableEnd === table) {
      out.push(...rows, { tableEnd: table, rows: (end.rows as number) + rows.length });
      continue;
    }
    out.push(l);
  }
  assert.ok(out.length === lines.length + rows.length, `the backup has a table ${table}`);
  return out;
}

// The columns a backup's table line names for `table`.
export function columnsOf(lines: unknown[], table: string): string[] {
  const t = lines.find((l) => (l as { table?: string }).table === table) as { columns: string[] } | undefined;
  assert.ok(t, `the backup has a table ${table}`);
  return t.columns;
}
