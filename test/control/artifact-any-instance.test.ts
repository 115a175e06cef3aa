// docs/design.md §13: artifacts are served by every instance, from the shared --artifacts folder, never
// from one instance's disk alone. A release added through one instance's admin API downloads,
// whole and by range, through another instance on the same PostgreSQL database.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { controlCli, startControlDaemon } from '../helpers/fleet.js';
import { REPO, sri } from '../helpers/host.js';
import { describePostgres } from '../helpers/store-backends.js';

describePostgres((backend) => {
  test('a release added through one instance is downloaded through the other', async () => {
    const db = await backend.createDatabase();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-artifact-instances-'));
    const artifacts = path.join(dir, 'artifacts');
    const shared = ['--artifacts', artifacts];
    const a = await startControlDaemon(db, 0, 1, { args: [...shared, '--admin-listen', '127.0.0.1:0'] });
    const b = await startControlDaemon(db, 0, 1, { args: shared });
    try {
      const op = await controlCli(db, [...shared, 'operator', 'add', 'ada', '--role', 'admin', '--json']);
      assert.equal(op.code, 0, op.stderr);
      const keys = await controlCli(db, ['keys', 'create', '--out', path.join(dir, 'keys'), '--json']);
      assert.equal(keys.code, 0, keys.stderr);
      const bytes = randomBytes(300_000);
      writeFileSync(path.join(dir, 'web.tgz'), bytes);
      const adminUrl = /admin API on (\S+)/.exec(a.output())?.[1];
      assert.ok(adminUrl, a.output());
      // Through A's admin API: the remote CLI uploads the tarball to A.
      const args = ['--server', adminUrl, 'release', 'add', 'web', '1.0.0', '--file', path.join(dir, 'web.tgz'), '--key', keys.json.privateKeyFile, '--base-url', a.url];
      const env = { ...process.env, STEWARD_CONTROL_DB: '', STEWARD_CONTROL_TOKEN: op.json.token as string };
      const add = await new Promise<{ code: number; stderr: string }>((resolve) =>
        execFile(process.execPath, [path.join(REPO, 'bin/steward-control.js'), ...args], { env }, (err, _o, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stderr })),
      );
      assert.equal(add.code, 0, add.stderr);
      const whole = await fetch(`${b.url}/v1/artifacts/web/1.0.0.tgz`);
      assert.equal(whole.status, 200);
      const got = Buffer.from(await whole.arrayBuffer());
      assert.equal(sri(got), sri(bytes));
      assert.equal(whole.headers.get('etag'), `"${sri(bytes)}"`);
      const part = await fetch(`${b.url}/v1/artifacts/web/1.0.0.tgz`, { headers: { range: 'bytes=1000-1999' } });
      assert.equal(part.status, 206);
      assert.deepEqual(Buffer.from(await part.arrayBuffer()), bytes.subarray(1000, 2000));
    } finally {
      await a.stop();
      await b.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
