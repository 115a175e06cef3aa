// The signals a real helper reports per app (docs/design.md §19): restarts and liveness failures
// since the activation of the current release, the CPU and RSS of its process, the release's metrics
// block; and a new activation starts them again with a new `since`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp, type TestHost } from '../helpers/host.js';
import { appStatus } from '../helpers/app-processes.js';
import { waitFor } from '../helpers/systemd-container.js';
import { freePort, releaseArgs } from '../fixtures/app-releases.js';

const fast = { restart: { baseMs: 100, capMs: 1000, maxAttempts: 10, healthyMs: 60_000 }, stopTimeoutMs: 1000 };
const config = { apps: { web: processApp(fast) }, supervisor: { sweepMs: 500, pollMs: 100 } };

const web = (host: TestHost) => appStatus(host, 'web');

async function killAndWaitForRespawn(host: TestHost): Promise<void> {
  const pid = (await web(host)).supervisor.pid as number;
  process.kill(pid, 'SIGKILL');
  await waitFor('a respawn', async () => {
    const a = await web(host);
    return a.supervisor?.pid && a.supervisor.pid !== pid && a.supervisor.state === 'running' ? a : null;
  }, 30_000, 100);
}

test('a run that restarts twice and fails a liveness check reports restarts 2 and the failures, since its activation; the next activation starts again', { timeout: 90_000 }, async (t) => {
  const host = useHost(t, config);
  await host.startHelper();
  const port = await freePort();
  const sick = path.join(host.scratch, 'sick');
  // A threshold no test reaches: the failures are counted, nothing restarts for them.
  const liveness = { intervalMs: 200, failureThreshold: 100, timeoutMs: 500 };
  const before = Date.now();
  const up = await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port, { stableMs: 200, failIfExists: sick, liveness, metrics: true }), '--json']);
  assert.equal(up.json?.outcome, 'active', up.stdout + up.stderr);
  const fresh = (await web(host)).signals;
  assert.ok(fresh, 'the status has signals');
  assert.ok(fresh.since >= before && fresh.since <= Date.now(), `since is the activation: ${fresh.since}`);
  assert.deepEqual([fresh.restarts, fresh.livenessFailures, fresh.watchdogKills, fresh.oomKills], [0, 0, 0, 0]);
  assert.ok(fresh.rssBytes > 1024 * 1024, `the RSS of a node process: ${fresh.rssBytes}`);
  assert.deepEqual(fresh.metrics, { url: `http://127.0.0.1:${port}/metrics`, requests: 'app_requests_total', errors: 'app_requests_total{code=~"5.."}' });

  await killAndWaitForRespawn(host);
  await killAndWaitForRespawn(host);
  writeFileSync(sick, '');
  const failing = await waitFor('a failed liveness check counted', async () => {
    const s = (await web(host)).signals;
    return s.livenessFailures >= 2 ? s : null;
  }, 30_000, 100);
  assert.equal(failing.restarts, 2, 'two respawns since the activation');
  assert.equal(failing.since, fresh.since, 'the same activation: the same since');
  assert.ok(failing.cpuSeconds >= 0);

  // A new activation: every count starts at 0 again, with a new since.
  const next = await agentctl(host, ['update', 'web', '2.0.0', ...releaseArgs(host.scratch, 'web', '2.0.0', port, { stableMs: 200, metrics: true }), '--json']);
  assert.equal(next.json?.outcome, 'active', next.stdout + next.stderr);
  const reset = (await web(host)).signals;
  assert.ok(reset.since > fresh.since, 'a new since');
  assert.deepEqual([reset.restarts, reset.livenessFailures, reset.watchdogKills, reset.oomKills], [0, 0, 0, 0]);
});

test('a release whose steward-release.json names a metrics URL off loopback is refused on the host, RELEASE_INVALID', { timeout: 60_000 }, async (t) => {
  const host = useHost(t, config);
  await host.startHelper();
  const port = await freePort();
  for (const url of [`http://10.0.0.1:${port}/metrics`, `http://example.com:${port}/metrics`, `https://127.0.0.1:${port}/metrics`, 'http://127.0.0.1/metrics', `http://127.0.0.2:${port}/metrics`]) {
    const r = await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port, { metrics: { url, requests: 'a_total', errors: 'b_total' } }), '--json']);
    assert.equal(r.json?.error?.code ?? r.json?.reason?.code, 'RELEASE_INVALID', `${url}: ${r.stdout}${r.stderr}`);
    assert.match(r.stdout + r.stderr, /metrics\.url must be http:\/\/127\.0\.0\.1/, url);
  }
});
