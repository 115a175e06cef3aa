import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { openSqliteStore } from '../../src/control/store/sqlite/open-sqlite-store.js';

// The attack: steward-control's SQLite database (every node's keys, hostnames, receipts, the
// signed catalog) and its -wal and -shm files created under the operator's umask, 0644 with the
// usual 022: any account on the machine reads them. The store is created 0600 whatever the umask,
// and a store left readable by group or others is made private at the next open.

const mode = (f: string) => statSync(f).mode & 0o777;

async function withUmask<T>(mask: number, fn: () => Promise<T>): Promise<T> {
  const old = process.umask(mask);
  try {
    return await fn();
  } finally {
    process.umask(old);
  }
}

test('a new database and its -wal and -shm files are 0600 even under umask 000', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-control-private-'));
  try {
    const file = path.join(dir, 'control.db');
    await withUmask(0o000, async () => {
      const store = openSqliteStore(file, { create: true });
      try {
        await store.write((tx) => tx.settings.set('probe', '1'));
        assert.ok(existsSync(`${file}-wal`) && existsSync(`${file}-shm`), 'the store runs in WAL mode');
        assert.deepEqual([file, `${file}-wal`, `${file}-shm`].map(mode), [0o600, 0o600, 0o600]);
      } finally {
        await store.close();
      }
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an existing database readable by others is made 0600 when it is opened, its data intact', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-control-private-'));
  try {
    const file = path.join(dir, 'control.db');
    const first = openSqliteStore(file, { create: true });
    await first.write((tx) => tx.settings.set('kept', 'yes'));
    await first.close();
    chmodSync(file, 0o644);
    // A -wal left behind 0664 (a crash, or a copy by hand) is tightened too.
    const raw = new Database(file);
    raw.pragma('wal_autocheckpoint = 0');
    raw.prepare("INSERT INTO settings (key, value) VALUES ('pending', 'in the wal')").run();
    chmodSync(`${file}-wal`, 0o664);
    const store = openSqliteStore(file);
    try {
      assert.equal(mode(file), 0o600);
      assert.equal(mode(`${file}-wal`), 0o600);
      assert.equal(await store.read((r) => r.settings.get('kept')), 'yes');
      assert.equal(await store.read((r) => r.settings.get('pending')), 'in the wal');
    } finally {
      await store.close();
      raw.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
