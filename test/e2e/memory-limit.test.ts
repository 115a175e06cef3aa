import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { useHost } from '../helpers/host-fixture.js';
import { processApp, type TestHost } from '../helpers/host.js';
import { freePort, type AppBehavior } from '../fixtures/app-releases.js';
import { appStatusOf } from '../helpers/helper-status.js';
import { updateActive } from '../helpers/update-active.js';
import { agentctl } from '../helpers/host.js';
import { skipUnlessCI } from '../helpers/skip.js';
import { waitFor as poll } from '../helpers/systemd-container.js';
import { findCgroupHome } from '../../src/helper/runners/app-cgroup.js';
import { findMemoryHome } from '../../src/helper/runners/memory-cgroup.js';

// apps.<app>.memoryMax with a real helper and the detached runner (docs/design.md §17 "Memory"):
// an app over its limit is killed by the kernel and its last exit says OOM in status; a kill -9
// by someone else does not; an OOM kill inside a watch window rolls the version back at once.

const fast = { restart: { baseMs: 200, capMs: 1000, maxAttempts: 5, healthyMs: 60_000 }, stopTimeoutMs: 1000 };
const config = (memoryMax: string | number) => ({ apps: { web: processApp({ ...fast, memoryMax }) }, supervisor: { sweepMs: 500, pollMs: 100 } });

const status = (host: TestHost): Promise<any> => appStatusOf(host.root, 'web');

const waitFor = <T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs = 30_000) => poll(what, fn, timeoutMs, 100);

const update = updateActive;

// False, after a skip naming why, where the helper of `host` would have no memory cgroup.
function hasMemoryCgroup(t: TestContext, host: TestHost): boolean {
  const memory = findMemoryHome(host.root, findCgroupHome(host.root));
  if (typeof memory !== 'string') return true;
  skipUnlessCI(t, `no memory cgroup for the helper here: ${memory}`);
  return false;
}

test('an app over its memoryMax is killed and status names its last exit OOM; a kill -9 of it is no OOM', { timeout: 60_000 }, async (t) => {
  const host = useHost(t, config('128M'));
  if (!hasMemoryCgroup(t, host)) return;
  await host.startHelper();
  const port = await freePort();
  const grow = path.join(host.scratch, 'grow');
  await update(host, '1.0.0', port, { growIfExists: grow });

  const first = (await status(host)).supervisor.pid as number;
  process.kill(first, 'SIGKILL');
  const killed = await waitFor('the respawn after a kill -9', async () => {
    const a = await status(host);
    return a.supervisor?.pid !== first && a.supervisor?.state === 'running' ? a : null;
  });
  assert.deepEqual(killed.supervisor.lastExit, { code: null, signal: 'SIGKILL' }, 'a kill -9 by someone is no OOM');

  // Only this process grows: its respawn after the OOM kill must not grow and die again.
  writeFileSync(grow, String(killed.supervisor.pid));
  const oom = await waitFor('an exit named OOM', async () => {
    const a = await status(host);
    return a.supervisor?.lastExit?.reason === 'OOM' ? a : null;
  });
  rmSync(grow, { force: true });
  assert.deepEqual(oom.supervisor.lastExit, { code: null, signal: 'SIGKILL', reason: 'OOM' });
  const log = readFileSync(path.join(host.paths.logDir, 'web.log'), 'utf8');
  assert.doesNotMatch(log, /survived/, 'the limit was applied');
  const json = await agentctl(host, ['status', 'web', '--json']);
  assert.equal(json.json.apps[0].supervisor.lastExit?.reason, 'OOM', 'agentctl status --json shows the reason');
  // The signals of docs/design.md §19: the OOM kill is counted, the kill -9 by someone is not.
  assert.deepEqual([json.json.apps[0].signals.oomKills, json.json.apps[0].signals.watchdogKills], [1, 0]);
});

test('an OOM kill inside a watch window rolls the version back at once, however many exits the window allows', { timeout: 60_000 }, async (t) => {
  const host = useHost(t, config(128 * 1024 * 1024));
  if (!hasMemoryCgroup(t, host)) return;
  await host.startHelper();
  const port = await freePort();
  const grow = path.join(host.scratch, 'grow');
  await update(host, '1.0.0', port, {});
  await update(host, '2.0.0', port, { growIfExists: grow, watchMs: 30_000, watchMaxRestarts: 5 });
  writeFileSync(grow, '');
  const after = await waitFor('the rollback to 1.0.0', async () => {
    const a = await status(host);
    return a.current === '1.0.0' && a.lastAttempt?.outcome === 'rolled-back' ? a : null;
  });
  assert.equal(after.lastAttempt.reason.code, 'UNHEALTHY_AFTER_ACTIVATION');
  assert.match(after.lastAttempt.reason.message, /OOM/);
  assert.ok(existsSync(after.lastAttempt.logFile) && !/survived/.test(readFileSync(after.lastAttempt.logFile, 'utf8')), 'the limit was applied');
});
