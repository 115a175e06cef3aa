import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp, type TestHost } from '../helpers/host.js';
import { fetchVersion, freePort, releaseArgs, type AppBehavior } from '../fixtures/app-releases.js';
import { appStatusOf } from '../helpers/helper-status.js';
import { updateActive } from '../helpers/update-active.js';
import { waitFor as poll } from '../helpers/systemd-container.js';
import { versionsDir } from '../../src/core/paths.js';

// The watchdog (docs/design.md §17, `start.watchdogMs`) with a real helper and the process runner:
// an app whose event loop blocks, or whose feeding timer stops, is killed and its exit is told as
// WATCHDOG (not as an ordinary exit); the supervisor respawns it, spending the budget; inside a
// watch window the kill rolls back at once; a restart of the helper neither kills a fed app nor
// stops the watching; absurd values are refused at staging.

const fast = { restart: { baseMs: 100, capMs: 1000, maxAttempts: 5, healthyMs: 60_000 }, stopTimeoutMs: 1000 };
const config = { apps: { web: processApp(fast) }, supervisor: { sweepMs: 500, pollMs: 100 } };

const status = (host: TestHost): Promise<any> => appStatusOf(host.root, 'web');

const waitFor = <T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs = 30_000) => poll(what, fn, timeoutMs, 100);

const update = (host: TestHost, version: string, port: number, behavior: AppBehavior): Promise<any> => updateActive(host, version, port, { watchMs: 0, ...behavior });

// Waits for the respawn after a watchdog kill of `pid`, and returns the app's status then.
async function respawnAfterKill(host: TestHost, pid: number): Promise<any> {
  return waitFor('the respawn after the watchdog kill', async () => {
    const a = await status(host);
    return a.supervisor?.pid && a.supervisor.pid !== pid && a.supervisor.state === 'running' && a.supervisor.lastExit ? a : null;
  });
}

for (const hang of ['loop', 'timer'] as const) {
  const what = hang === 'loop' ? 'a blocked event loop (while (true) {})' : 'a feeding setTimeout that never fires again';
  test(`the watchdog kills ${what}: its exit is WATCHDOG, and the supervisor respawns it, spending the budget`, { timeout: 60_000 }, async (t) => {
    const host = useHost(t, config);
    await host.startHelper();
    const port = await freePort();
    // Fed every 100 ms from its start; silent from 1.5 s on, past its activation.
    await update(host, '1.0.0', port, { watchdogMs: 400, hang, hangAfterMs: 1500 });
    const first = (await status(host)).supervisor.pid as number;
    const after = await respawnAfterKill(host, first);
    assert.equal(after.supervisor.lastExit.reason, 'WATCHDOG', JSON.stringify(after.supervisor.lastExit));
    assert.equal(after.supervisor.lastExit.signal, 'SIGABRT', 'killed by SIGABRT, not an exit of its own');
    assert.ok(after.supervisor.attempts >= 1, 'the respawn spent the budget');
    assert.equal(after.current, '1.0.0');
    // The signals of docs/design.md §19: a watchdog kill, counted before the record that holds it.
    assert.ok(after.signals.watchdogKills >= 1, JSON.stringify(after.signals));
    assert.equal(after.signals.oomKills, 0);
  });
}

test('an ordinary exit of a watched app is not told as WATCHDOG', { timeout: 60_000 }, async (t) => {
  const host = useHost(t, config);
  await host.startHelper();
  const port = await freePort();
  await update(host, '1.0.0', port, { watchdogMs: 400, crashAfterMs: 1500 });
  const first = (await status(host)).supervisor.pid as number;
  const after = await respawnAfterKill(host, first);
  assert.deepEqual(after.supervisor.lastExit, { code: 3, signal: null });
  assert.equal(after.signals.watchdogKills, 0, 'an ordinary exit is a restart, not a watchdog kill');
});

test('inside a watch window a watchdog kill rolls the version back at once', { timeout: 60_000 }, async (t) => {
  const host = useHost(t, config);
  await host.startHelper();
  const port = await freePort();
  await update(host, '1.0.0', port, {});
  const bad = await update(host, '2.0.0', port, { watchdogMs: 400, hang: 'loop', hangAfterMs: 1500, watchMs: 30_000, watchMaxRestarts: 5 });
  const back = await waitFor('the rollback to 1.0.0', async () => {
    const a = await status(host);
    return a.current === '1.0.0' && a.lastAttempt?.outcome === 'rolled-back' ? a : null;
  });
  assert.equal(back.lastAttempt.reason.code, 'UNHEALTHY_AFTER_ACTIVATION');
  assert.match(back.lastAttempt.reason.message, new RegExp(`killed by the watchdog.*activated by attempt ${bad.attemptId}`));
  assert.equal(await fetchVersion(port), '1.0.0');
});

test('a restart of the helper neither kills a fed app nor ends the watching', { timeout: 60_000 }, async (t) => {
  const host = useHost(t, config);
  const helper = await host.startHelper();
  const port = await freePort();
  const hangFile = path.join(host.scratch, 'hang');
  await update(host, '1.0.0', port, { watchdogMs: 300, hang: 'loop', hangIfExists: hangFile });
  const before = (await status(host)).supervisor;
  await helper.kill();
  // Down for several deadlines: the app feeds on into its fd, and nobody reads.
  await new Promise((r) => setTimeout(r, 1500));
  await host.startHelper();
  await new Promise((r) => setTimeout(r, 1500));
  const up = (await status(host)).supervisor;
  assert.deepEqual([up.pid, up.attempts, up.lastExit], [before.pid, 0, null], 'the same process, never killed');
  // The restarted helper watches it: a hang now is caught.
  writeFileSync(hangFile, '');
  const after = await respawnAfterKill(host, before.pid);
  assert.equal(after.supervisor.lastExit.reason, 'WATCHDOG');
});

test('a watchdogMs of 0 or an absurd value is refused at staging, with nothing staged', { timeout: 60_000 }, async (t) => {
  const host = useHost(t, config);
  await host.startHelper();
  const port = await freePort();
  for (const [i, watchdogMs] of [0, 50, 3_600_001, 1.5].entries()) {
    const version = `1.0.${i}`;
    const r = await agentctl(host, ['update', 'web', version, ...releaseArgs(host.scratch, 'web', version, port, { watchdogMs }), '--json']);
    assert.equal(r.code, 3, r.stdout + r.stderr);
    assert.equal(r.json.error.code, 'RELEASE_INVALID');
    assert.match(r.json.error.message, /start\.watchdogMs must be a whole number of milliseconds from 100 to 3600000/);
    assert.equal(existsSync(path.join(versionsDir(host.paths, 'web'), version)), false, `${version} is not staged`);
  }
  assert.equal((await status(host)).current, null);
});

