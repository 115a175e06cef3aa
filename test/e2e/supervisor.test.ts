import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, promises as fsp, writeFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { stateFile, versionsDir } from '../../src/core/paths.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp, type TestHost } from '../helpers/host.js';
import { freePort, releaseArgs } from '../fixtures/app-releases.js';
import { waitFor as poll } from '../helpers/systemd-container.js';

// Fast respawn policy for tests: waits of 0, 200, 400, 800, 1000 ms.
const fast = { restart: { baseMs: 100, capMs: 1000, maxAttempts: 5, healthyMs: 60_000 }, stopTimeoutMs: 1000 };
const config = (extra = {}) => ({ apps: { web: processApp({ ...fast, ...extra }) }, supervisor: { sweepMs: 500, pollMs: 100 } });

async function status(host: TestHost): Promise<any> {
  const r = await agentctl(host, ['status', 'web', '--json']);
  assert.equal(r.code, 0, r.stderr);
  return r.json.apps[0];
}

// Polls every 100 ms (helper-status.ts pollPause: longer after a slow check), for up to `timeoutMs`.
const waitFor = <T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs = 30_000) => poll(what, fn, timeoutMs, 100);

// Live session leaders running from the app's release trees: the app's instances.
async function instances(host: TestHost): Promise<number[]> {
  const root = await fsp.realpath(versionsDir(host.paths, 'web'));
  const out: number[] = [];
  for (const name of await fsp.readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const cwd = await fsp.readlink(`/proc/${name}/cwd`).catch(() => '');
    if (!cwd.startsWith(root + '/')) continue;
    const stat = await fsp.readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (f[0] !== 'Z' && Number(f[3]) === Number(name)) out.push(Number(name));
  }
  return out;
}

test('an app crashing in a loop is respawned at +0, +200, +400 ... ms and ends in error after 5 respawns; restart revives it', { timeout: 90_000 }, async (t) => {
  const host = useHost(t, config());
  await host.startHelper();
  const port = await freePort();
  const crashFile = path.join(host.scratch, 'crash');
  writeFileSync(crashFile, '');
  const up = await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port, { crashAfterMs: 1500, crashIfExists: crashFile, stableMs: 200 }), '--json']);
  assert.equal(up.code, 0, up.stdout + up.stderr);
  // The count of exits since activation cannot be written (as on a full disk: here a folder at
  // its path): the supervisor's decisions go on without it.
  const exitsFile = stateFile(host.paths, 'web').replace(/\.json$/, '.exits.json');
  mkdirSync(path.join(exitsFile, 'in-the-way'), { recursive: true });

  const gaveUp = await waitFor('error', async () => {
    const a = await status(host);
    return a.supervisor?.state === 'error' ? a : null;
  });
  assert.equal(gaveUp.supervisor.attempts, 5);
  assert.match(gaveUp.supervisor.giveUpReason, /gave up after 5 respawns.*code 3/);
  assert.deepEqual(gaveUp.supervisor.lastExit, { code: 3, signal: null });
  assert.equal(gaveUp.supervisor.restartsSinceActivation, 0, 'a count that does not read is none');
  assert.deepEqual(await instances(host), [], 'nothing runs once the app is in error');
  rmSync(exitsFile, { recursive: true });
  // No sixth respawn, even after the longest wait.
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal((await status(host)).supervisor.state, 'error');

  rmSync(crashFile);
  const r = await agentctl(host, ['restart', 'web', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const revived = await status(host);
  assert.equal(revived.supervisor.state, 'running');
  assert.equal(revived.supervisor.attempts, 0, 'a fresh budget');
  assert.deepEqual(await instances(host), [r.json.pid]);
});

test('a crash is heard at once and respawned with a new pid; stop holds the app and nothing respawns it', { timeout: 60_000 }, async (t) => {
  const host = useHost(t, config());
  await host.startHelper();
  const port = await freePort();
  assert.equal((await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port, { stableMs: 200 })])).code, 0);
  const first = (await status(host)).supervisor.pid as number;
  const killedAt = Date.now();
  process.kill(first, 'SIGKILL');
  const second = await waitFor('a respawn', async () => {
    const a = await status(host);
    return a.supervisor?.pid && a.supervisor.pid !== first && a.supervisor.state === 'running' ? a : null;
  });
  console.log(`respawned in ${Date.now() - killedAt} ms (pid ${first} -> ${second.supervisor.pid})`);
  assert.equal(second.supervisor.attempts, 1);
  assert.deepEqual(second.supervisor.lastExit, { code: null, signal: 'SIGKILL' });
  assert.deepEqual(await instances(host), [second.supervisor.pid]);

  assert.equal((await agentctl(host, ['stop', 'web'])).code, 0);
  await new Promise((r) => setTimeout(r, 1000));
  const stopped = await status(host);
  assert.equal(stopped.supervisor.state, 'stopped');
  assert.ok(stopped.hold, 'stop puts a hold');
  assert.deepEqual(await instances(host), []);
  assert.equal((await agentctl(host, ['start', 'web'])).code, 0);
  assert.equal((await instances(host)).length, 1);
});

for (const how of ['SIGKILL', 'SIGTERM'] as const) {
  test(`a helper ${how === 'SIGKILL' ? 'killed with SIGKILL' : 'stopped cleanly'} and restarted adopts the running app: same pid, one instance`, { timeout: 60_000 }, async (t) => {
    const host = useHost(t, config());
    const helper = await host.startHelper();
    const port = await freePort();
    assert.equal((await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port, { stableMs: 200 })])).code, 0);
    const before = (await status(host)).supervisor.pid as number;
    if (how === 'SIGKILL') await helper.kill();
    else await helper.stop();
    assert.deepEqual(await instances(host), [before], 'the app outlives the helper');
    await host.startHelper();
    await new Promise((r) => setTimeout(r, 700)); // a sweep and several polls
    const after = await status(host);
    assert.equal(after.supervisor.pid, before, 'adopted, not restarted');
    assert.equal(after.supervisor.state, 'running');
    assert.deepEqual(await instances(host), [before], 'exactly one instance');
    // An adopted process's death is noticed by the poll and respawned.
    process.kill(before, 'SIGKILL');
    await waitFor('a respawn of the adopted app', async () => {
      const a = await status(host);
      return a.supervisor?.pid && a.supervisor.pid !== before && a.supervisor.state === 'running';
    });
    assert.equal((await instances(host)).length, 1);
  });
}
