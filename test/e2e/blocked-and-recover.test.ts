import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp } from '../helpers/host.js';
import { appStatus, waitReady } from '../helpers/app-processes.js';
import { fetchVersion, freePort, releaseArgs } from '../fixtures/app-releases.js';

test('a garbage journal blocks only its app until agentctl recover runs an activation of current', { timeout: 90_000 }, async (t) => {
  const ports = { web: await freePort(), api: await freePort() };
  const h = useHost(t, { apps: { web: processApp({ stopTimeoutMs: 1000 }), api: processApp({ stopTimeoutMs: 1000 }) } });
  const helper = await h.startHelper();
  const update = (app: 'web' | 'api', version: string) =>
    agentctl(h, ['update', app, version, ...releaseArgs(h.scratch, app, version, ports[app]), '--json']);
  for (const [app, version] of [['web', '1.0.0'], ['web', '2.0.0'], ['api', '1.0.0']] as const) {
    const r = await update(app, version);
    assert.equal(r.code, 0, `${app} ${version}: ${r.stderr}${r.stdout}`);
  }

  await helper.stop();
  const journal = path.join(h.paths.journalDir, 'web.json');
  const garbage = '{"schemaVersion": 1, "attemptId": "x", oops not json';
  writeFileSync(journal, garbage, { mode: 0o600 });
  const mtime = statSync(journal).mtimeMs;

  await h.startHelper();
  await waitReady(h);
  const web = await appStatus(h, 'web');
  assert.equal(web.blocked?.reason, 'JOURNAL_INVALID', 'status shows the block');
  assert.ok(web.journalError, 'status says what is wrong with the journal');
  assert.equal((await appStatus(h, 'api')).blocked, null, 'other apps are unaffected');

  const refused = await update('web', '3.0.0');
  assert.equal(refused.code, 3, refused.stderr + refused.stdout);
  assert.equal(refused.json.error.code, 'BLOCKED');
  assert.equal(readFileSync(journal, 'utf8'), garbage, 'the journal is left untouched');
  assert.equal(statSync(journal).mtimeMs, mtime);
  assert.equal((await appStatus(h, 'web')).current, '2.0.0');

  const api = await update('api', '2.0.0');
  assert.equal(api.code, 0, 'another app still updates: ' + api.stderr + api.stdout);
  assert.equal(await fetchVersion(ports.api), '2.0.0');

  const rec = await agentctl(h, ['recover', 'web', '--json']);
  assert.equal(rec.code, 0, rec.stderr + rec.stdout);
  assert.equal(rec.json.outcome, 'active');
  assert.equal(rec.json.targetVersion, '2.0.0');
  assert.ok(rec.json.receipt?.payload, 'the recovery is an attempt with a receipt');
  const after = await appStatus(h, 'web');
  assert.equal(after.blocked, null, 'recover clears blocked');
  assert.equal(after.current, '2.0.0');
  assert.equal(after.lastAttempt.attemptId, rec.json.attemptId, 'the journal is valid again');
  assert.equal(after.lastAttempt.outcome, 'active');
  assert.equal(after.previous, '1.0.0', 're-activating current keeps the real previous version to roll back to');
  assert.equal(await fetchVersion(ports.web), '2.0.0');

  const next = await update('web', '3.0.0');
  assert.equal(next.code, 0, 'updates work again: ' + next.stderr + next.stdout);
  assert.equal(await fetchVersion(ports.web), '3.0.0');
});
