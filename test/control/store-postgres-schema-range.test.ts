// Migrations on PostgreSQL run only by `steward-control migrate`, under an advisory lock, and
// each steward-control declares the schema range it works with (docs/design.md §13): a database it
// cannot work on is refused with STATE_INVALID naming the database's schema and the range; one
// that a newer release only expanded is used, so a rolling upgrade stops no older instance.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { pgQuery } from '../helpers/postgres.js';
import { migrateStore, openStore } from '../../src/control/store/open-store.js';
import { PG_SCHEMA_RANGE } from '../../src/control/store/postgres/schema.js';
import { REPO } from '../helpers/host.js';
import { describePostgres } from '../helpers/store-backends.js';

const { newest } = PG_SCHEMA_RANGE;

// A later release's migration, as steward_migrations would record it.
const recordMigration = (url: string, version: number, compatibleFrom: number) =>
  pgQuery(url, `INSERT INTO steward_migrations (version, "compatibleFrom", "appliedAt") VALUES ($1, $2, 0)`, [version, compatibleFrom]);

async function cli(...args: string[]): Promise<{ code: number; json: any }> {
  try {
    const r = await promisify(execFile)(process.execPath, [path.join(REPO, 'bin', 'steward-control.js'), ...args]);
    return { code: 0, json: JSON.parse(r.stdout) };
  } catch (err) {
    const e = err as { code: number; stdout: string };
    return { code: e.code, json: JSON.parse(e.stdout) };
  }
}

const refusal = (pattern: RegExp) => (err: Error & { code?: string }) => err.code === 'STATE_INVALID' && pattern.test(err.message);

describePostgres((backend) => {
  test('two migrates at once apply each migration once, and the store opens on the result', async () => {
    const url = await backend.createDatabase().then((u) => pgQuery(u, 'DROP TABLE steward_migrations, settings, tokens, nodes, receipts, releases, runs, run_nodes, issued, app_keys, operators, sessions, auth_failures, audit, downgrades, targets, run_owners, pins, signal_samples, run_judgements, hooks, hook_deliveries, hook_marks, trust_metadata, trust_keys, trust_pending, trust_pending_keys').then(() => u));
    const [a, b] = await Promise.all([migrateStore(url), migrateStore(url)]);
    assert.deepEqual([...(a.applied ?? []), ...(b.applied ?? [])].sort((x, y) => x - y), Array.from({ length: newest }, (_, i) => i + 1));
    assert.deepEqual((await pgQuery(url, 'SELECT version FROM steward_migrations ORDER BY version')).rows.map((r) => r.version), Array.from({ length: newest }, (_, i) => i + 1));
    await (await openStore(url)).close();
  });

  test('serve and every command refuse a database that was never migrated, and say to run migrate', async () => {
    const url = await backend.createDatabase();
    await pgQuery(url, 'DROP TABLE steward_migrations');
    await assert.rejects(openStore(url), refusal(/no steward schema.*steward-control migrate/));
    const r = await cli('--db', url, '--artifacts', '/nonexistent', 'nodes', '--json');
    assert.deepEqual([r.code, r.json.error.code], [1, 'STATE_INVALID']);
    const serve = await cli('--db', url, '--artifacts', '/nonexistent', 'serve', '--listen', '127.0.0.1:0', '--init', '--json');
    assert.deepEqual([serve.code, serve.json.error.code], [2, 'USAGE']);
    assert.match(serve.json.error.message, /migrate/);
  });

  test('a database that a newer release only expanded is used: an older instance goes on during a rolling upgrade', async () => {
    const url = await backend.createDatabase();
    await recordMigration(url, newest + 1, newest);
    const store = await openStore(url);
    try {
      await store.write((tx) => tx.settings.set('still', 'working'));
      assert.equal(await store.read((tx) => tx.settings.get('still')), 'working');
    } finally {
      await store.close();
    }
    // migrate of the older release changes nothing on it.
    assert.deepEqual((await migrateStore(url)).applied, []);
  });

  test('a database contracted past this release is refused with STATE_INVALID naming its schema and our range, by the library and by the CLI', async () => {
    const url = await backend.createDatabase();
    await recordMigration(url, newest + 1, newest);
    await recordMigration(url, newest + 2, newest + 1);
    const named = new RegExp(`schema version ${newest + 2}.*schema ${newest + 1} or later.*schema versions ${PG_SCHEMA_RANGE.oldest} to ${newest}`);
    await assert.rejects(openStore(url), refusal(named));
    const r = await cli('--db', url, '--artifacts', '/nonexistent', 'nodes', '--json');
    assert.deepEqual([r.code, r.json.error.code], [1, 'STATE_INVALID']);
    assert.match(r.json.error.message, named);
    assert.doesNotMatch(r.json.error.message, /password/);
  });
});
