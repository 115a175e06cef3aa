// `steward-control audit [--since 1h] [--json]` (docs/design.md §12): every change the local CLI makes
// is in the log as `local:<user>`, in the transaction of the change; --since keeps the recent
// entries, and every entry is printed however many pages the log takes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { localActor, recordAudit } from '../../src/control/audit/record-audit.js';
import { artifactsDirOf } from '../../src/control/catalog/artifact-path.js';
import { DEFAULT_PAGE } from '../../src/control/operations/paging.js';
import { runOperation } from '../../src/control/operations/operations.js';
import { tokenCreate } from '../../src/control/operations/token-ops.js';
import { openSqliteStore } from '../../src/control/store/sqlite/open-sqlite-store.js';
import { REPO } from '../helpers/host.js';

const BIN = path.join(REPO, 'bin', 'steward-control.js');
let dir = '';
let db = '';
const HOUR = 3_600_000;

function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, '--db', db, ...args], { env: { ...process.env, DEBUG: '' } }, (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'steward-audit-'));
  db = path.join(dir, 'control.db');
  assert.equal((await cli('init')).code, 0);
  // A change two hours ago on the store's clock, then entries enough for more than a page.
  const store = openSqliteStore(db, { clock: { now: () => Date.now() - 2 * HOUR } });
  try {
    await runOperation({ store, actor: localActor(), artifactsDir: artifactsDirOf(db) }, tokenCreate, { ttl: '1h' });
    await store.write(async (tx) => {
      for (let i = 0; i < DEFAULT_PAGE; i++) await recordAudit(tx, localActor(), 'test.filler', String(i));
    });
  } finally {
    await store.close();
  }
  assert.equal((await cli('operator', 'add', 'adam', '--role', 'admin')).code, 0);
  assert.equal((await cli('token', 'create', '--label', 'env=prod')).code, 0);
});
after(() => rmSync(dir, { recursive: true, force: true }));

test('audit --json lists every entry over several pages, oldest first, with who did it as local:<user>', async () => {
  const all = await cli('audit', '--json');
  assert.equal(all.code, 0, all.stderr);
  const { entries } = JSON.parse(all.stdout) as { entries: Array<{ id: number; at: number; operator: string; action: string; target: string | null; source: string | null; details: Record<string, unknown> }> };
  assert.equal(entries.length, DEFAULT_PAGE + 3, 'every page');
  assert.equal(entries[0]?.action, 'token.create');
  assert.deepEqual(entries.map((e) => e.id), [...entries.map((e) => e.id)].sort((a, b) => a - b));
  assert.ok(entries.every((e) => e.operator === localActor().operator && e.source === null));
  assert.deepEqual(entries.slice(-2).map((e) => [e.action, e.target]), [['operator.add', 'adam'], ['token.create', entries.at(-1)?.target]]);
  assert.deepEqual(entries.at(-2)?.details, { role: 'admin' });
  assert.deepEqual(Object.keys(entries[0] as object), ['id', 'at', 'operator', 'action', 'target', 'source', 'details']);
});

test('audit --since 1h keeps only the last hour, as a table or as JSON', async () => {
  const j = await cli('audit', '--since', '1h', '--json');
  const lastHour = JSON.parse(j.stdout).entries as Array<{ action: string; at: number }>;
  assert.deepEqual(lastHour.map((e) => e.action), ['operator.add', 'token.create']);
  const t = await cli('audit', '--since', '1h');
  const lines = t.stdout.trimEnd().split('\n');
  assert.match(lines[0] as string, /^WHEN\s+OPERATOR\s+ACTION\s+TARGET\s+SOURCE\s+DETAILS$/);
  assert.equal(lines.length, 3);
  assert.match(lines[1] as string, new RegExp(`${localActor().operator}\\s+operator\\.add\\s+adam\\s+-\\s+role=admin$`));
  assert.match(lines[2] as string, /token\.create .*labels=\{"env":"prod"\}/);
  // `--since 1s` once the newest entry is more than a second old (the CLI runs on the real clock).
  const wait = (lastHour.at(-1)?.at ?? 0) + 1100 - Date.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  const none = await cli('audit', '--since', '1s');
  assert.deepEqual([none.code, none.stdout], [0, 'no audit entries\n']);
});

test('a bad --since is a usage error (exit 2)', async () => {
  const r = await cli('audit', '--since', 'an hour', '--json');
  assert.deepEqual([r.code, JSON.parse(r.stdout).error.code], [2, 'USAGE']);
});
