// A database written by a newer steward-control is refused clearly, never guessed at (docs/design.md §10).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { openSqliteStore } from '../../src/control/store/sqlite/open-sqlite-store.js';
import { STORE_SCHEMA_VERSION } from '../../src/control/store/sqlite/schema.js';
import { REPO } from '../helpers/host.js';

test('a database with a newer user_version is refused with STATE_INVALID, by the library and by the CLI', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-control-schema-'));
  try {
    const file = path.join(dir, 'control.db');
    await openSqliteStore(file, { create: true }).close();
    const raw = new Database(file);
    raw.pragma(`user_version = ${STORE_SCHEMA_VERSION + 1}`);
    raw.close();
    assert.throws(() => openSqliteStore(file), (err: Error & { code?: string }) => err.code === 'STATE_INVALID' && /newer/.test(err.message));
    let out = '';
    let status = 0;
    try {
      execFileSync(process.execPath, [path.join(REPO, 'bin', 'steward-control.js'), '--db', file, 'nodes', '--json'], { stdio: ['ignore', 'pipe', 'ignore'] });
    } catch (err) {
      status = (err as { status: number }).status;
      out = String((err as { stdout: Buffer }).stdout);
    }
    assert.equal(status, 1);
    assert.equal(JSON.parse(out).error.code, 'STATE_INVALID');
    // Refused, not migrated: the version is still the newer one.
    const check = new Database(file, { readonly: true });
    assert.equal(check.pragma('user_version', { simple: true }), STORE_SCHEMA_VERSION + 1);
    check.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a fresh database gets the current schema version and reopens', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-control-schema-'));
  try {
    const file = path.join(dir, 'control.db');
    await openSqliteStore(file, { create: true }).close();
    const s = openSqliteStore(file);
    assert.equal(s.db.pragma('user_version', { simple: true }), STORE_SCHEMA_VERSION);
    assert.equal(s.db.pragma('journal_mode', { simple: true }), 'wal');
    await s.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
