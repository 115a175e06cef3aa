// A commit is durable before steward-control answers: the agent deletes a receipt from its outbox
// once a heartbeat's answer acknowledges it, so the commit behind that answer must survive a
// power cut (WAL with synchronous=FULL fsyncs the log at each commit; NORMAL does not).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openSqliteStore } from '../../src/control/store/sqlite/open-sqlite-store.js';

test('the store commits with WAL and synchronous=FULL', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-control-sync-'));
  try {
    const store = openSqliteStore(path.join(dir, 'control.db'), { create: true });
    try {
      assert.equal(store.db.pragma('journal_mode', { simple: true }), 'wal');
      assert.equal(store.db.pragma('synchronous', { simple: true }), 2, 'synchronous is FULL (2)');
    } finally {
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
