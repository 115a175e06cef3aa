// A backup is checked row by row before anything reaches the database, even one the backup key
// signed: a JSON column holding text that is not JSON, or JSON the store's readers cannot use (a
// receipt's envelope, a node's apps or labels, a run's windows, an audit entry's details), and a
// value of the wrong type are refused BACKUP_INVALID naming the table, row and column, with the
// target left empty. Before, such rows restored and `receipts` then answered 500. And every
// column of the newest schema, on each backend, has its check (src/control/backup/backup-rows.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import Database from 'better-sqlite3';
import { COLUMNS } from '../../src/control/backup/backup-rows.js';
import { isPostgresUrl } from '../../src/control/store/postgres/open-postgres-store.js';
import { backupBody, columnsOf, restoreRefusedInvalid, runRestore, testBackupKey, withRows, writeBackupLines } from '../helpers/backup-file.js';
import { cliJson } from '../helpers/control-daemon-nodes.js';
import { controlCli } from '../helpers/fleet.js';
import { pgQuery } from '../helpers/postgres.js';
import { describeEachBackend, type StoreBackend } from '../helpers/store-backends.js';
import { scratchDir } from '../helpers/scratch.js';

const tmp = () => scratchDir('steward-garbage-backup-');

const envelopeOf = (payload: unknown) => JSON.stringify({ payload: Buffer.from(JSON.stringify(payload)).toString('base64'), sig: 'c2ln', keyId: '0123456789abcdef' });
const RECEIPT = { v: 1, nodeId: 'n-1', app: 'web', attemptId: 'r1-0123456789abcdef', seq: 1, fromVersion: '1.0.0', targetVersion: '1.1.0', integrity: null, outcome: 'active', startedAt: 1, updatedAt: 1 };
const ENVELOPE = envelopeOf(RECEIPT);
const APP = JSON.stringify([{ name: 'web', current: '1.0.0', previous: null, held: false, blocked: false, supervisor: { state: 'running', pid: 10, attempts: 0, since: 1 } }]);

// A row a steward-control could have written, by column name.
const GOOD: Record<string, Record<string, unknown>> = {
  nodes: { nodeId: 'n-1', hostname: 'host-1', nodePublicKey: 'pem', helperPublicKey: 'pem', enrolledAt: 1, lastSeq: 3, lastHeartbeatAt: 2, apps: APP, bootId: 'b', agentVersion: '0.1.0', labels: '{"env":"prod"}', clockSkewMs: -5, skewRefusedSince: null, skewRefusedAt: null, skewRefusedMs: null, trust: null, trustAt: null },
  receipts: { nodeId: 'n-1', seq: 1, app: 'web', attemptId: 'r1-0123456789abcdef', outcome: 'active', reasonCode: null, fromVersion: '1.0.0', targetVersion: '1.1.0', updatedAt: 1, receivedAt: 1, counts: true, envelope: ENVELOPE },
  operators: { name: 'bob', role: 'viewer', tokenHash: 'b'.repeat(64), createdAt: 1, rotatedAt: null },
  audit: { id: 1, at: 1, operator: 'bob', action: 'x', target: null, source: null, details: '{}' },
  runs: {
    id: 1, app: 'web', version: '1.1.0', startedAt: 1, canary: null, batchSize: 1, verdictTimeoutMs: 1000, allowRetryReverted: false, heartbeatIntervalMs: 1000, stopped: false, status: 'halted',
    haltCode: 'X', haltNodeId: null, haltMessage: 'm', endedAt: 2, selector: '', canaries: 1, namedCanaries: '[]', canarySeed: 0, batch: '1', bakeMs: 0, maxFailures: 0, maxRefused: '50%', maxFetchFailures: '20%',
    failuresCarried: 0, windows: '["daily 02:00-04:00"]', tz: 'UTC', startAt: null, paused: false, behind: false, retryOf: null, analysis: null,
  },
  hooks: { name: 'pager', url: 'https://hooks.example/x', events: '["run.halted"]', secret: 's'.repeat(32), createdAt: 1, createdBy: null },
  hook_deliveries: {
    id: 1, hook: 'pager', eventId: 'e-1', type: 'dev.steward.run.halted', body: '{}', createdAt: 1, state: 'pending', attempts: 0, nextAt: 1,
    leaseOwner: null, leaseUntil: null, lastAttemptAt: null, lastError: null, finishedAt: null,
  },
};

function rowOf(columns: string[], table: string, change: Record<string, unknown>, sqliteBooleans: boolean): unknown[] {
  const good = GOOD[table] as Record<string, unknown>;
  return columns.map((c) => {
    assert.ok(c in good || c in change, `the test has a value for ${table}.${c}`);
    const v = c in change ? change[c] : good[c];
    return sqliteBooleans && typeof v === 'boolean' ? (v ? 1 : 0) : v;
  });
}

async function signedBackupOf(backend: StoreBackend): Promise<{ dir: string; body: unknown[] }> {
  const dir = tmp();
  const db = await backend.createDatabase();
  const file = path.join(dir, 'control.backup');
  await cliJson({ cli: (a: string[]) => controlCli(db, ['--artifacts', path.join(dir, 'artifacts'), ...a]) }, ['backup', '--key', testBackupKey().key, '--out', file]);
  return { dir, body: backupBody(file) };
}

// Every column of every table of a database of the newest schema, as `table.column`.
async function columnsOfDatabase(db: string): Promise<string[]> {
  if (isPostgresUrl(db)) {
    const r = await pgQuery(db, `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name <> 'steward_migrations'`);
    return r.rows.map((x) => `${x.table_name}.${x.column_name}`).sort();
  }
  const d = new Database(db, { readonly: true });
  try {
    const tables = (d.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'`).all() as Array<{ name: string }>).map((t) => t.name);
    return tables.flatMap((t) => (d.pragma(`table_info("${t}")`) as Array<{ name: string }>).map((c) => `${t}.${c.name}`)).sort();
  } finally {
    d.close();
  }
}

describeEachBackend((backend) => {
  test('rows whose columns hold what the store cannot read are refused naming the table, row and column, even when signed', async () => {
    const { dir, body } = await signedBackupOf(backend);
    const sqliteBooleans = (body[0] as { source: string }).source === 'sqlite';
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['receipts', { envelope: 'garbage{' }, /row 2 of table receipts: column envelope holds text that is not JSON/],
      ['receipts', { envelope: '{"payload":1}' }, /row 2 of table receipts: column envelope holds JSON that is not a signed envelope/],
      ['receipts', { envelope: envelopeOf({ v: 1 }) }, /row 2 of table receipts: column envelope holds a signed envelope whose payload is not a receipt/],
      ['receipts', { envelope: JSON.stringify({ payload: 'bm90IGpzb24=', sig: 'c2ln', keyId: '0123456789abcdef' }) }, /row 2 of table receipts: column envelope holds a signed envelope whose payload is not JSON/],
      ['receipts', { counts: 'yes' }, /row 2 of table receipts: column counts holds text .* not a boolean/],
      ['nodes', { apps: '{"web":1}' }, /row 2 of table nodes: column apps holds JSON that is not a heartbeat's apps/],
      ['nodes', { labels: '{"Not A Key":"x"}' }, /row 2 of table nodes: column labels holds JSON that is not labels/],
      ['nodes', { lastSeq: '3' }, /row 2 of table nodes: column lastSeq holds text .* not an integer/],
      ['nodes', { hostname: null }, /row 2 of table nodes: column hostname holds null, not text/],
      ['runs', { windows: '["whenever"]' }, /row 2 of table runs: column windows holds JSON that is not a list of rollout windows/],
      ['runs', { status: 'exploded' }, /row 2 of table runs: column status holds "exploded", not one of/],
      ['operators', { role: 'root' }, /row 2 of table operators: column role holds "root", not one of viewer, operator, admin/],
      ['audit', { details: '[1,2]' }, /row 2 of table audit: column details holds JSON that is not a JSON object/],
      ['hooks', { events: '"run.halted"' }, /row 2 of table hooks: column events holds JSON that is not a list of event types/],
      ['hooks', { url: 'file:///etc/passwd' }, /row 2 of table hooks: column url holds "file:\/\/\/etc\/passwd", not an http\(s\) URL/],
      ['hook_deliveries', { state: 'lost' }, /row 2 of table hook_deliveries: column state holds "lost", not one of pending, delivered, gave-up/],
    ];
    for (const [table, change, message] of cases) {
      const columns = columnsOf(body, table);
      const good = rowOf(columns, table, table === 'runs' || table === 'audit' || table === 'hook_deliveries' ? { id: 1 } : {}, sqliteBooleans);
      const bad = rowOf(columns, table, { ...(table === 'runs' || table === 'audit' || table === 'hook_deliveries' ? { id: 2 } : {}), ...(table === 'hooks' ? { name: 'other' } : {}), ...(table === 'hook_deliveries' ? { eventId: 'e-2' } : {}), ...(table === 'nodes' ? { nodeId: 'n-2' } : {}), ...(table === 'receipts' ? { seq: 2 } : {}), ...(table === 'operators' ? { name: 'carol', tokenHash: 'c'.repeat(64) } : {}), ...change }, sqliteBooleans);
      const file = path.join(dir, `${table}-${Object.keys(change).join('-')}.backup`);
      writeBackupLines(file, withRows(body, table, [good, bad]));
      await restoreRefusedInvalid(backend, file, message);
    }

    // The same rows without the garbage restore, and `receipts` reads them.
    const all = ['nodes', 'receipts', 'runs', 'operators', 'audit'].reduce((lines, t) => withRows(lines, t, [rowOf(columnsOf(body, t), t, {}, sqliteBooleans)]), body);
    const file = path.join(dir, 'good.backup');
    writeBackupLines(file, all);
    const target = await backend.emptyTarget();
    const artifacts = path.join(tmp(), 'artifacts');
    const r = await runRestore(target, artifacts, file);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const receipts = await controlCli(target, ['--artifacts', artifacts, 'receipts', '--node', 'n-1', '--json']);
    assert.equal(receipts.code, 0, receipts.stdout + receipts.stderr);
    assert.deepEqual(receipts.json.receipts.map((x: { seq: number; outcome: string }) => [x.seq, x.outcome]), [[1, 'active']]);
  });

  test('every column of the newest schema has its check in backup-rows.ts', async () => {
    const named = Object.entries(COLUMNS)
      .flatMap(([t, cs]) => Object.keys(cs).map((c) => `${t}.${c}`))
      .sort();
    assert.deepEqual(await columnsOfDatabase(await backend.createDatabase()), named);
  });
});
