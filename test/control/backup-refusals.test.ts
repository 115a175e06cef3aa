// What `steward-control backup` and `restore` refuse, on each backend, and that a refusal
// leaves everything as it was: an existing --out without --force; a target that holds data; a
// backup from a newer schema (STATE_INVALID); a truncated or corrupt backup (BACKUP_INVALID,
// the target still empty, no tarball placed). And what they accept: --force, a backup from an
// older schema (migrated as it is restored).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { pgQuery } from '../helpers/postgres.js';
import { isPostgresUrl } from '../../src/control/store/postgres/open-postgres-store.js';
import { PG_SCHEMA_RANGE } from '../../src/control/store/postgres/schema.js';
import { MIGRATIONS, STORE_SCHEMA_VERSION } from '../../src/control/store/sqlite/schema.js';
import { createKeys } from '../../src/control/catalog/create-keys.js';
import { backupBody, testBackupKey } from '../helpers/backup-file.js';
import { addRelease, createToken } from '../helpers/control-seed.js';
import { cliJson } from '../helpers/control-daemon-nodes.js';
import { controlCli, type ControlCliResult } from '../helpers/fleet.js';
import { describeEachBackend, type StoreBackend } from '../helpers/store-backends.js';
import { scratchDir } from '../helpers/scratch.js';

const tmp = () => scratchDir('steward-backup-refusals-');

// A CLI on `db` with its tarballs in `artifacts`.
const on = (db: string, artifacts: string) => ({ cli: (args: string[]) => controlCli(db, ['--artifacts', artifacts, ...args]) });

// A database of `backend` with a token, a release whose 256 KiB tarball it keeps, and their audit,
// made in this process by what `keys create`, `release add` and `token create` run on the
// database (control-seed.ts): three CLI processes less for each store.
async function storeWithData(backend: StoreBackend, dir: string): Promise<{ db: string; artifacts: string }> {
  const db = await backend.createDatabase();
  const artifacts = path.join(dir, 'artifacts');
  const keys = await createKeys(path.join(dir, 'keys'), 'release');
  const file = path.join(dir, 'web-1.0.0.tgz');
  writeFileSync(file, randomBytes(256 * 1024));
  await addRelease(db, artifacts, { app: 'web', version: '1.0.0', file, baseUrl: 'http://127.0.0.1:1', key: keys.privateKeyFile });
  await createToken(db, artifacts);
  return { db, artifacts };
}

// What a restore target holds: a SQLite file's folder listing, or a PostgreSQL database's tables.
async function targetState(db: string): Promise<string[]> {
  if (isPostgresUrl(db)) return (await pgQuery(db, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1`)).rows.map((r) => r.table_name);
  return readdirSync(path.dirname(db)).sort();
}

// Every file under `dir` (none when it does not exist).
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath ?? (e as unknown as { path: string }).path, e.name));
}

function refused(r: ControlCliResult, code: string, exit: number): void {
  assert.equal(r.code, exit, r.stdout + r.stderr);
  assert.equal(r.json?.error?.code, code, r.stdout);
}

// Restores `backup` into a fresh empty target of `backend` and expects a refusal that left it,
// and its tarball folder, as they were.
async function restoreRefused(backend: StoreBackend, backup: string, code: string, exit: number, message: RegExp): Promise<void> {
  const db = await backend.emptyTarget();
  const artifacts = path.join(tmp(), 'artifacts');
  const before = await targetState(db);
  const r = await controlCli(db, ['--artifacts', artifacts, 'restore', '--key', testBackupKey().pub, '--from', backup, '--json']);
  refused(r, code, exit);
  assert.match(r.json.error.message, message);
  assert.deepEqual(await targetState(db), before, 'the target is as it was');
  assert.deepEqual(filesUnder(artifacts), [], 'no tarball was left behind');
}

describeEachBackend((backend) => {
  test('backup refuses an existing --out without --force and leaves it as it was; --force replaces it with a whole backup', async () => {
    const dir = tmp();
    const { db, artifacts } = await storeWithData(backend, dir);
    const out = path.join(dir, 'control.backup');
    writeFileSync(out, 'an earlier backup\n');
    const r = await controlCli(db, ['--artifacts', artifacts, 'backup', '--key', testBackupKey().key, '--out', out, '--json']);
    refused(r, 'OUTPUT_EXISTS', 3);
    assert.equal(readFileSync(out, 'utf8'), 'an earlier backup\n');
    assert.deepEqual(readdirSync(dir).filter((f) => f.includes('.tmp')), [], 'no temp file is left');

    const forced = await cliJson(on(db, artifacts), ['backup', '--key', testBackupKey().key, '--out', out, '--force']);
    assert.equal(forced.artifacts, 1);
    assert.equal(statSync(out).size, forced.bytes);
    assert.equal(statSync(out).mode & 0o777, 0o600, 'a backup holds the store: private');
    assert.equal((backupBody(out)[0] as { format: string }).format, 'steward-control-backup');
  });

  test('backup refuses a store whose kept tarball is missing or changed on disk, and leaves no file at --out', async () => {
    const dir = tmp();
    const { db, artifacts } = await storeWithData(backend, dir);
    const tarball = path.join(artifacts, 'web', '1.0.0.tgz');
    const out = path.join(dir, 'control.backup');
    writeFileSync(tarball, randomBytes(256 * 1024));
    const changed = await controlCli(db, ['--artifacts', artifacts, 'backup', '--key', testBackupKey().key, '--out', out, '--json']);
    refused(changed, 'INTEGRITY_MISMATCH', 3);
    assert.match(changed.json.error.message, /web 1\.0\.0/);
    rmSync(tarball);
    const missing = await controlCli(db, ['--artifacts', artifacts, 'backup', '--key', testBackupKey().key, '--out', out, '--json']);
    refused(missing, 'NOT_FOUND', 1);
    assert.match(missing.json.error.message, /would not restore its rollouts/);
    assert.deepEqual(readdirSync(dir).filter((f) => f.includes('control.backup')), [], 'nothing at --out, no temp file');
  });

  test('restore refuses a target that holds data with TARGET_NOT_EMPTY and changes nothing in it', async () => {
    const dir = tmp();
    const source = await storeWithData(backend, dir);
    const backup = path.join(dir, 'control.backup');
    await cliJson(on(source.db, source.artifacts), ['backup', '--key', testBackupKey().key, '--out', backup]);
    const target = await storeWithData(backend, tmp());
    const before = [await cliJson(on(target.db, target.artifacts), ['token', 'list']), await cliJson(on(target.db, target.artifacts), ['audit'])];
    const r = await controlCli(target.db, ['--artifacts', target.artifacts, 'restore', '--key', testBackupKey().pub, '--from', backup, '--json']);
    refused(r, 'TARGET_NOT_EMPTY', 3);
    assert.deepEqual([await cliJson(on(target.db, target.artifacts), ['token', 'list']), await cliJson(on(target.db, target.artifacts), ['audit'])], before);
  });

  test('restore refuses a backup of a newer schema with STATE_INVALID, leaving the target empty', async () => {
    const dir = tmp();
    const { db, artifacts } = await storeWithData(backend, dir);
    if (isPostgresUrl(db)) await pgQuery(db, `INSERT INTO steward_migrations (version, "compatibleFrom", "appliedAt") VALUES ($1, $2, 0)`, [PG_SCHEMA_RANGE.newest + 1, PG_SCHEMA_RANGE.newest]);
    else {
      const raw = new Database(db);
      raw.pragma(`user_version = ${STORE_SCHEMA_VERSION + 1}`);
      raw.close();
    }
    const backup = path.join(dir, 'control.backup');
    const made = await cliJson(on(db, artifacts), ['backup', '--key', testBackupKey().key, '--out', backup]);
    assert.equal(made.schemaVersion, STORE_SCHEMA_VERSION + 1);
    await restoreRefused(backend, backup, 'STATE_INVALID', 1, /newer than/);
  });

  test('restore refuses a truncated or corrupt backup with BACKUP_INVALID, leaving the target empty and no tarball placed', async () => {
    const dir = tmp();
    const { db, artifacts } = await storeWithData(backend, dir);
    const backup = path.join(dir, 'control.backup');
    await cliJson(on(db, artifacts), ['backup', '--key', testBackupKey().key, '--out', backup]);
    const whole = readFileSync(backup);

    // Cut short: the gzip stream ends early.
    const truncated = path.join(dir, 'truncated.backup');
    writeFileSync(truncated, whole);
    truncateSync(truncated, Math.floor(whole.length * 0.7));
    await restoreRefused(backend, truncated, 'BACKUP_INVALID', 1, /truncated or corrupt/);

    // A whole gzip stream that stops before the end line (cut at a line).
    const noEnd = path.join(dir, 'no-end.backup');
    writeFileSync(noEnd, gzipSync(Buffer.from(backupBody(backup).map((l) => JSON.stringify(l) + '\n').join(''))));
    await restoreRefused(backend, noEnd, 'BACKUP_INVALID', 1, /before its end line/);

    // One byte changed in the middle of the compressed stream.
    const flipped = path.join(dir, 'flipped.backup');
    const bytes = Buffer.from(whole);
    const mid = Math.floor(bytes.length / 2);
    bytes[mid] = (bytes[mid] as number) ^ 0x5a;
    writeFileSync(flipped, bytes);
    await restoreRefused(backend, flipped, 'BACKUP_INVALID', 1, /not a complete steward-control backup/);

    // A row changed and the file compressed again: the end line's digest no longer holds.
    const edited = path.join(dir, 'edited.backup');
    writeFileSync(edited, gzipSync(Buffer.from(gunzipSync(whole).toString('utf8').replace('"web","1.0.0"', '"web","1.0.1"'))));
    await restoreRefused(backend, edited, 'BACKUP_INVALID', 1, /sha256/);
  });

  test('a backup of an older schema is restored through the migrations after its version', async () => {
    const dir = tmp();
    const old = path.join(dir, 'v3.db');
    const raw = new Database(old);
    for (let v = 0; v < 3; v++) (MIGRATIONS[v] as (d: Database.Database) => void)(raw);
    raw.pragma('user_version = 3');
    raw.prepare(`INSERT INTO nodes (nodeId, hostname, nodePublicKey, helperPublicKey, enrolledAt, lastSeq, labels) VALUES ('n-1', 'host-1', 'pem', 'pem', 1, 7, '{"env":"prod"}')`).run();
    raw.close();
    const backup = path.join(dir, 'v3.backup');
    assert.equal((await cliJson(on(old, path.join(dir, 'artifacts')), ['backup', '--key', testBackupKey().key, '--out', backup])).schemaVersion, 3);

    const db = await backend.emptyTarget();
    const artifacts = path.join(tmp(), 'artifacts');
    const r = await cliJson(on(db, artifacts), ['restore', '--key', testBackupKey().pub, '--from', backup]);
    assert.deepEqual([r.schemaVersion, r.migratedTo], [3, STORE_SCHEMA_VERSION]);
    const [node] = (await cliJson(on(db, artifacts), ['nodes'])).nodes;
    assert.deepEqual([node.nodeId, node.lastSeq, node.labels, node.clockSkewMs], ['n-1', 7, { env: 'prod' }, null]);
  });
});
