import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp } from '../helpers/host.js';
import { fetchVersion, freePort, releaseArgs } from '../fixtures/app-releases.js';

// Issue 7 item 4, through a whole activation: a new version whose health endpoint accepts the
// connection and never answers fails its probe at `timeoutMs`; the update rolls back to the old
// version instead of hanging, and the helper still answers afterwards.
test('an update whose health check hangs is rolled back at the probe timeout, and the old version serves again', { timeout: 90_000 }, async (t) => {
  const host = useHost(t, { apps: { web: processApp({ stopTimeoutMs: 1000 }) } });
  const port = await freePort();
  await host.startHelper();
  const v1 = await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port), '--json']);
  assert.equal(v1.code, 0, v1.stderr + v1.stdout);

  const hung = await agentctl(host, ['update', 'web', '2.0.0', ...releaseArgs(host.scratch, 'web', '2.0.0', port, { health: 'hang', timeoutMs: 1500 }), '--json']);
  assert.equal(hung.code, 4, hung.stderr + hung.stdout);
  assert.equal(hung.json.outcome, 'rolled-back');
  assert.equal(hung.json.reason.code, 'REPLACEMENT_UNHEALTHY');
  assert.match(hung.json.reason.message, /healthz timed out/, 'the reason says the check timed out');
  assert.equal(await fetchVersion(port), '1.0.0');
  const st = await agentctl(host, ['status', '--json']);
  assert.equal(st.code, 0);
  const web = st.json.apps.find((a: { name: string }) => a.name === 'web');
  assert.equal(web.current, '1.0.0');
  assert.equal(web.lastAttempt.outcome, 'rolled-back');
});
