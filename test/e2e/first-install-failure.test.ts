import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp } from '../helpers/host.js';
import { appStatus, recordedPid } from '../helpers/app-processes.js';
import { fetchVersion, freePort, releaseArgs } from '../fixtures/app-releases.js';

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

test('a failing first install stops the process, removes current, ends failed and frees the port', { timeout: 60_000 }, async (t) => {
  const port = await freePort();
  const host = useHost(t, { apps: { web: processApp({ stopTimeoutMs: 1000 }) } });
  await host.startHelper();
  const r = await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port, { health: 'fail', ignoreSigterm: true, timeoutMs: 2000 }), '--json']);
  assert.equal(r.code, 1, r.stderr + r.stdout);
  assert.equal(r.json.outcome, 'failed');
  assert.equal(r.json.fromVersion, null);
  assert.equal(r.json.reason.code, 'REPLACEMENT_UNHEALTHY');
  assert.ok(r.json.receipt?.payload, 'a failed first install has a receipt');

  const current = path.join(host.paths.appsDir, 'web/current');
  assert.throws(() => lstatSync(current), { code: 'ENOENT' }, 'no current is left behind');
  const web = await appStatus(host, 'web');
  assert.equal(web.current, null);
  assert.equal(web.currentState, 'absent');
  assert.equal(web.lastAttempt.outcome, 'failed');
  assert.equal(recordedPid(host, 'web'), null, 'the run record names no process');
  assert.equal(await fetchVersion(port), null, 'nothing answers on the port');
  assert.equal(await canListen(port), true, "the app's port is free");
});
