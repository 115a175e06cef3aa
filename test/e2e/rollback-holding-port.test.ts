import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp } from '../helpers/host.js';
import { appStatus } from '../helpers/app-processes.js';
import { fetchVersion, freePort, releaseArgs } from '../fixtures/app-releases.js';

test("a rollback where the failing new version keeps holding the old version's port still ends rolled-back, not failed", { timeout: 60_000 }, async (t) => {
  const port = await freePort();
  const host = useHost(t, { apps: { web: processApp({ stopTimeoutMs: 1000 }) } });
  await host.startHelper();
  const first = await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port), '--json']);
  assert.equal(first.code, 0, first.stderr + first.stdout);
  assert.equal(await fetchVersion(port), '1.0.0');

  // 2.0.0 binds the very same port, fails its health check and shrugs off SIGTERM.
  const bad = await agentctl(host, [
    'update', 'web', '2.0.0',
    ...releaseArgs(host.scratch, 'web', '2.0.0', port, { health: 'fail', ignoreSigterm: true, timeoutMs: 2000 }),
    '--json',
  ]);
  assert.equal(bad.code, 4, bad.stderr + bad.stdout);
  assert.equal(bad.json.outcome, 'rolled-back');
  assert.equal(bad.json.reason.code, 'REPLACEMENT_UNHEALTHY');
  assert.equal(await fetchVersion(port), '1.0.0', 'the old version answers on its port afterwards');
  const web = await appStatus(host, 'web');
  assert.equal(web.current, '1.0.0');
  assert.equal(web.lastAttempt.outcome, 'rolled-back');
});
