import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp } from '../helpers/host.js';
import { fetchVersion, freePort, releaseArgs, type AppBehavior } from '../fixtures/app-releases.js';
import { appFdFolder } from '../../src/helper/runners/app-fds.js';

// Readiness (docs/design.md §17, `start.ready: "fd"`) with a real helper and the process runner: an
// activation probes the app only after its newline on STEWARD_READY_FD; a version that never
// writes it, or closes the fd (or exits) without it, is rolled back with its own reason code.

const host = useHost(after, { apps: { web: processApp({ stopTimeoutMs: 1000, restart: { baseMs: 100, capMs: 1000, maxAttempts: 5, healthyMs: 60_000 } }) }, supervisor: { sweepMs: 500, pollMs: 100 } });
let port: number;

before(async () => {
  port = await freePort();
  await host.startHelper();
});

const update = (version: string, behavior: AppBehavior) =>
  agentctl(host, ['update', 'web', version, ...releaseArgs(host.scratch, 'web', version, port, { stableMs: 200, watchMs: 0, ...behavior }), '--json']);

const earlyProbes = () => path.join(host.paths.appStateRoot, 'web', 'early-probes');

test('an app whose health endpoint answers before it says it is ready is probed only after its newline', { timeout: 60_000 }, async () => {
  const r = await update('1.0.0', { ready: 'after', readyAfterMs: 1500 });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.equal(r.json.outcome, 'active');
  assert.equal(existsSync(earlyProbes()), false, 'no /healthz request came before the newline');
  assert.equal(await fetchVersion(port), '1.0.0');
});

test('a version that never says it is ready is rolled back with APP_NOT_READY', { timeout: 60_000 }, async () => {
  const r = await update('2.0.0', { ready: 'never', timeoutMs: 1500 });
  assert.equal(r.code, 4, r.stdout + r.stderr);
  assert.equal(r.json.outcome, 'rolled-back');
  assert.equal(r.json.reason.code, 'APP_NOT_READY');
  assert.match(r.json.reason.message, /wrote no newline on STEWARD_READY_FD within 1500 ms/);
  assert.equal(existsSync(earlyProbes()), false, 'the version that never got ready was never probed');
  assert.equal(await fetchVersion(port), '1.0.0');
});

test('a version that closes its readiness fd without the newline is rolled back at once with READY_FD_CLOSED', { timeout: 60_000 }, async () => {
  // A minute's timeout: only the end of the fd can end this wait within the test's own timeout.
  const r = await update('2.0.1', { ready: 'close', readyAfterMs: 300, timeoutMs: 60_000 });
  assert.equal(r.code, 4, r.stdout + r.stderr);
  assert.equal(r.json.outcome, 'rolled-back');
  assert.equal(r.json.reason.code, 'READY_FD_CLOSED');
  assert.match(r.json.reason.message, /closed STEWARD_READY_FD without writing the newline/);
  assert.equal(await fetchVersion(port), '1.0.0');
});

test('a version that exits before its newline is rolled back at once with READY_FD_CLOSED', { timeout: 60_000 }, async () => {
  const r = await update('2.0.2', { ready: 'never', crash: 3, timeoutMs: 60_000 });
  assert.equal(r.code, 4, r.stdout + r.stderr);
  assert.equal(r.json.reason.code, 'READY_FD_CLOSED');
  assert.equal(await fetchVersion(port), '1.0.0');
});

test('a respawn of a ready app is not held up by readiness, and a stop removes its FIFO', { timeout: 60_000 }, async () => {
  const st = await agentctl(host, ['status', 'web', '--json']);
  const pid = st.json.apps[0].supervisor?.pid;
  assert.ok(Number.isInteger(pid), JSON.stringify(st.json.apps[0]));
  assert.deepEqual(readdirSync(appFdFolder(host.paths, 'web')), ['ready']);
  process.kill(pid, 'SIGKILL');
  let back: string | null = null;
  for (let i = 0; i < 100 && back !== '1.0.0'; i++) {
    await new Promise((r) => setTimeout(r, 100));
    back = await fetchVersion(port);
  }
  assert.equal(back, '1.0.0', 'the respawned 1.0.0 serves again');
  const stop = await agentctl(host, ['stop', 'web', '--json']);
  assert.equal(stop.code, 0, stop.stdout + stop.stderr);
  assert.equal(existsSync(appFdFolder(host.paths, 'web')), false, 'the FIFOs went with the stop');
});
