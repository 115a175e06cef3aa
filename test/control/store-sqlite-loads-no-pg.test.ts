import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// A SQLite store, its backup and its restore load neither pg nor the PostgreSQL store
// (src/control/store/open-store.ts imports them only for a postgres:// URL), and a postgres://
// URL still reaches them. pg is CommonJS, so whatever loaded it is in the require cache.

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const openStore = pathToFileURL(path.join(dist, 'src/control/store/open-store.js')).href;

function loadedAfter(body: string): string[] {
  const script = `
    import { createRequire } from 'node:module';
    import * as s from ${JSON.stringify(openStore)};
    ${body}
    const loaded = Object.keys(createRequire(import.meta.url).cache);
    process.stdout.write(JSON.stringify(loaded.filter((k) => /[\\/]node_modules[\\/]pg[\\/]/.test(k))));
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as string[];
}

test('opening, migrating, snapshotting and loading a SQLite store loads no pg; a postgres:// URL does', (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-no-pg-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const db = path.join(dir, 'c.db');
  const copy = path.join(dir, 'copy.db');
  const none = loadedAfter(`
    await s.migrateStore(${JSON.stringify(db)}, { create: true });
    const store = await s.openStore(${JSON.stringify(db)});
    await store.close();
    const snap = await s.openSnapshot(${JSON.stringify(db)});
    await snap.close();
    const loader = await s.openLoader(${JSON.stringify(copy)});
    await loader.abort();
  `);
  assert.deepEqual(none, []);
  // Nothing listens on port 1: the open fails, but only after pg was loaded to try.
  const some = loadedAfter(`await s.openStore('postgres://steward@127.0.0.1:1/none').then((st) => st.close(), () => {});`);
  assert.ok(some.length > 0, 'a postgres:// URL loads pg');
});
