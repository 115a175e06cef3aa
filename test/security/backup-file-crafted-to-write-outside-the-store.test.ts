// A backup file is a file anyone may have handed the operator: `restore` treats it as hostile.
// Crafted backups, each with a correct end line (so that only the crafted part is wrong), try to
// write where a restore must not: SQL in a table or column name, a backend's own bookkeeping
// table (SQLite's sqlite_sequence, PostgreSQL's steward_migrations), a tarball named to land
// outside the tarball folder, a tarball whose bytes are not its release's, a row longer than its
// table. Each is refused BACKUP_INVALID with the target left empty and nothing written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { pgQuery } from '../helpers/postgres.js';
import { isPostgresUrl } from '../../src/control/store/postgres/open-postgres-store.js';
import { backupBody, testBackupKey, writeBackupLines } from '../helpers/backup-file.js';
import { cliJson } from '../helpers/control-daemon-nodes.js';
import { controlCli } from '../helpers/fleet.js';
import { describeEachBackend, type StoreBackend } from '../helpers/store-backends.js';
import { scratchDir } from '../helpers/scratch.js';

const tmp = () => scratchDir('steward-hostile-backup-');

async function tablesOf(db: string): Promise<string[]> {
  if (!isPostgresUrl(db)) return existsSync(db) ? ['(a file)'] : readdirSync(path.dirname(db));
  return (await pgQuery(db, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`)).rows.map((r) => r.table_name);
}

// The lines of a real backup of an empty store of `backend`, without the end line.
async function emptyStoreBackup(backend: StoreBackend): Promise<unknown[]> {
  const dir = tmp();
  const db = await backend.createDatabase();
  const file = path.join(dir, 'control.backup');
  await cliJson({ cli: (a) => controlCli(db, ['--artifacts', path.join(dir, 'artifacts'), ...a]) }, ['backup', '--key', testBackupKey().key, '--out', file]);
  return backupBody(file);
}

const tableLines = (table: string, columns: string[], rows: unknown[][]) => [{ table, columns }, ...rows, { tableEnd: table, rows: rows.length }];

function tarballLines(app: string, version: string, bytes: Buffer, integrityOf = bytes) {
  return [{ artifact: { app, version, size: bytes.length, integrity: 'sha512-' + createHash('sha512').update(integrityOf).digest('base64') } }, { chunk: bytes.toString('base64') }];
}

async function refusedAndNothingWritten(backend: StoreBackend, lines: unknown[], message: RegExp): Promise<void> {
  const dir = tmp();
  const file = path.join(dir, 'crafted.backup');
  writeBackupLines(file, lines);
  const db = await backend.emptyTarget();
  const artifacts = path.join(dir, 'artifacts');
  const before = await tablesOf(db);
  const r = await controlCli(db, ['--artifacts', artifacts, 'restore', '--key', testBackupKey().pub, '--from', file, '--json']);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.equal(r.json.error.code, 'BACKUP_INVALID', r.stdout);
  assert.match(r.json.error.message, message);
  assert.deepEqual(await tablesOf(db), before, 'the target is as it was');
  assert.deepEqual(existsSync(artifacts) ? readdirSync(artifacts, { recursive: true }).filter((f) => String(f).endsWith('.tgz')) : [], [], 'no tarball was written');
  assert.deepEqual(readdirSync(path.dirname(dir)).filter((f) => f === 'evil.tgz' || f === 'x'), [], 'nothing beside the folder');
}

describeEachBackend((backend) => {
  test('a table or column name carrying SQL is refused before it reaches the database', async () => {
    const [header, ...rest] = await emptyStoreBackup(backend);
    await refusedAndNothingWritten(backend, [header, ...tableLines('settings"; DROP TABLE nodes; --', ['key'], []), ...rest], /a table line/);
    await refusedAndNothingWritten(backend, [header, ...tableLines('settings', ['key" text); DROP TABLE nodes; --'], []), ...rest], /a table line/);
  });

  test("rows for the backend's own bookkeeping table are refused", async () => {
    const [header, ...rest] = await emptyStoreBackup(backend);
    const own = backend.name === 'sqlite' ? tableLines('sqlite_sequence', ['name', 'seq'], [['runs', 1]]) : tableLines('steward_migrations', ['version', 'compatibleFrom', 'appliedAt'], [[99, 99, 0]]);
    await refusedAndNothingWritten(backend, [header, ...own, ...rest], /is not one of the control plane's/);
  });

  test('a row longer than its table is refused', async () => {
    const [header, ...rest] = await emptyStoreBackup(backend);
    await refusedAndNothingWritten(backend, [header, ...tableLines('settings', ['key', 'value'], [['a', 'b', 'c']]), ...rest], /stored values/);
  });

  test("rows that break the schema's constraints are refused as a whole, nothing half-loaded", async () => {
    const [header, ...rest] = await emptyStoreBackup(backend);
    const settings = rest.findIndex((l) => (l as { table?: string }).table === 'settings');
    const crafted = [...rest];
    crafted.splice(settings, 2, { table: 'settings', columns: ['key', 'value'] }, ['heartbeatSeconds', '30'], ['heartbeatSeconds', '31'], { tableEnd: 'settings', rows: 2 });
    await refusedAndNothingWritten(backend, [header, ...crafted], /rows of settings do not load/);
  });

  test('a tarball named to land outside the tarball folder is refused', async () => {
    const lines = await emptyStoreBackup(backend);
    await refusedAndNothingWritten(backend, [...lines, ...tarballLines('../../evil', '1.0.0', Buffer.from('x'))], /a tarball line/);
    await refusedAndNothingWritten(backend, [...lines, ...tarballLines('web', '../../../x', Buffer.from('x'))], /a tarball line/);
  });

  test('a tarball whose bytes are not those its integrity names is refused and not kept', async () => {
    const lines = await emptyStoreBackup(backend);
    await refusedAndNothingWritten(backend, [...lines, ...tarballLines('web', '1.0.0', Buffer.from('other bytes'), Buffer.from('the bytes'))], /do not match its integrity/);
  });
});
