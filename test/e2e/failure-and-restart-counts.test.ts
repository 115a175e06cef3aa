// What status, releases and a refusal say of a version's failures and restarts: a version that
// failed is never said to have failed 0 times, and a new version's restart count starts at 0
// (issue 31 item 20).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp, type TestHost } from '../helpers/host.js';
import { appStatus } from '../helpers/app-processes.js';
import { waitFor } from '../helpers/systemd-container.js';
import { freePort, releaseArgs } from '../fixtures/app-releases.js';

const fast = { restart: { baseMs: 100, capMs: 1000, maxAttempts: 5, healthyMs: 60_000 }, stopTimeoutMs: 1000 };
const config = { apps: { web: processApp(fast) }, supervisor: { sweepMs: 500, pollMs: 100 } };

const web = (host: TestHost) => appStatus(host, 'web');

test('a first install that failed is quarantined and the refusal and releases say it failed, never "failed 0 time(s)"', { timeout: 60_000 }, async (t) => {
  const host = useHost(t, config);
  await host.startHelper();
  const port = await freePort();
  const args = releaseArgs(host.scratch, 'web', '1.0.0', port, { health: 'fail', timeoutMs: 1500 });
  const first = await agentctl(host, ['update', 'web', '1.0.0', ...args, '--json']);
  assert.equal(first.json?.outcome, 'failed', first.stdout + first.stderr);
  // A failed first install is not blamed on the version (nothing to roll back to): 0 counted.
  const again = await agentctl(host, ['update', 'web', '1.0.0', ...args, '--json']);
  assert.equal(again.json?.error?.code, 'QUARANTINED', again.stdout + again.stderr);
  const message: string = again.json.error.message;
  assert.doesNotMatch(message, /\b0 time/, message);
  assert.match(message, /^web 1\.0\.0 failed .*first install.* and is quarantined until /, message);
  const human = await agentctl(host, ['update', 'web', '1.0.0', ...args]);
  assert.doesNotMatch(human.stderr + human.stdout, /\b0 time/);
  const releases = await agentctl(host, ['releases', 'web']);
  assert.equal(releases.code, 0, releases.stderr);
  assert.match(releases.stdout, /quarantined until .*: it failed /);
  assert.doesNotMatch(releases.stdout, /\b0 (earlier )?failures|\b0 time/, releases.stdout);
});

test('a version rolled back once is said to have failed once', { timeout: 60_000 }, async (t) => {
  const host = useHost(t, config);
  await host.startHelper();
  const port = await freePort();
  assert.equal((await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port, { stableMs: 200 })])).code, 0);
  const args = releaseArgs(host.scratch, 'web', '2.0.0', port, { health: 'fail', timeoutMs: 1500 });
  const bad = await agentctl(host, ['update', 'web', '2.0.0', ...args, '--json']);
  assert.equal(bad.json?.outcome, 'rolled-back', bad.stdout + bad.stderr);
  const again = await agentctl(host, ['update', 'web', '2.0.0', ...args, '--json']);
  assert.equal(again.json?.error?.code, 'QUARANTINED', again.stdout + again.stderr);
  assert.match(again.json.error.message, /^web 2\.0\.0 failed once and is quarantined until /);
});

test("a new version's restart count starts at 0, whatever the version before it was respawned", { timeout: 60_000 }, async (t) => {
  const host = useHost(t, config);
  await host.startHelper();
  const port = await freePort();
  assert.equal((await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port, { stableMs: 200 })])).code, 0);
  const first = (await web(host)).supervisor.pid as number;
  process.kill(first, 'SIGKILL');
  const respawned = await waitFor('a respawn of 1.0.0', async () => {
    const a = await web(host);
    return a.supervisor?.pid && a.supervisor.pid !== first && a.supervisor.state === 'running' ? a : null;
  }, 30_000, 100);
  assert.equal(respawned.supervisor.attempts, 1, 'the respawn of 1.0.0 is counted');
  assert.match((await agentctl(host, ['status', 'web'])).stdout, /\(1 respawns\)/);

  const up = await agentctl(host, ['update', 'web', '2.0.0', ...releaseArgs(host.scratch, 'web', '2.0.0', port, { stableMs: 200 }), '--json']);
  assert.equal(up.json?.outcome, 'active', up.stdout + up.stderr);
  const after = await web(host);
  assert.equal(after.supervisor.version, '2.0.0');
  assert.equal(after.supervisor.attempts, 0, '2.0.0 was never respawned');
  assert.doesNotMatch((await agentctl(host, ['status', 'web'])).stdout, /respawns/);
  // Its own respawns count from there.
  const pid2 = after.supervisor.pid as number;
  process.kill(pid2, 'SIGKILL');
  const second = await waitFor('a respawn of 2.0.0', async () => {
    const a = await web(host);
    return a.supervisor?.pid && a.supervisor.pid !== pid2 && a.supervisor.state === 'running' ? a : null;
  }, 30_000, 100);
  assert.equal(second.supervisor.attempts, 1);
});
