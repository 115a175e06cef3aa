import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort, releaseArgs, appRelease } from '../fixtures/app-releases.js';
import { isRunning, recordedPid } from '../helpers/app-processes.js';
import { reportScenarios, shIn, writeIn } from '../helpers/container-exec.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp, sri } from '../helpers/host.js';
import { bootOrSkip, CONTAINER_REPO, waitFor } from '../helpers/systemd-container.js';

// Attack (or just a daemon's chdir("/")): the helper dies between spawning an app and recording
// its process, and the app has left its release tree. The helper's next start looked for such an
// unrecorded process by its working folder, found nothing, and started a second instance next to
// it (under systemd: could not start one at all, the unit's name being taken, and gave up on the
// app). The proof that a process is the app's is made durable before the spawn (the instance
// token in the record) or is its cgroup or unit, never where it runs from.

test('under the detached runner, a helper start stops an unrecorded app process that left versions/', { timeout: 90_000 }, async (t) => {
  const host = useHost(t, { apps: { web: processApp({ stopTimeoutMs: 1000 }) }, supervisor: { sweepMs: 500, pollMs: 100 } });
  let helper = await host.startHelper();
  const port = await freePort();
  const up = await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port, { chdir: '/', stableMs: 200 }), '--json']);
  assert.equal(up.code, 0, up.stdout + up.stderr);
  const file = path.join(host.paths.supervisorDir, 'web.json');
  const read = () => JSON.parse(readFileSync(file, 'utf8'));

  // Runs a start whose process the crash leaves unrecorded, kills the helper, and puts back the
  // record that start found (`before`, applied to the record as it was then): a crash between
  // the spawn and its record leaves that record and the process.
  const crashAfterSpawn = async (start: string[], before: (rec: any) => any) => {
    const rec = read();
    const r = await agentctl(host, [...start, '--json']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const orphan = recordedPid(host, 'web');
    assert.ok(orphan && orphan !== rec.process?.pid && isRunning(orphan), `a new process: ${orphan}`);
    await waitFor('the app to leave its release tree', async () => readlinkSync(`/proc/${orphan}/cwd`) === '/', 10_000, 20);
    await helper.kill();
    writeFileSync(file, JSON.stringify(before(rec)), { mode: 0o600 });
    helper = await host.startHelper();
    try {
      assert.equal(isRunning(orphan), false, 'the unrecorded process still runs');
    } finally {
      // So that a failure here leaves the next case its own port.
      if (isRunning(orphan)) process.kill(orphan, 'SIGKILL');
    }
    return orphan;
  };

  await t.test("in agentctl restart (the record says stopped, no process): it stays stopped, as the record says", async () => {
    await crashAfterSpawn(['restart', 'web'], (rec) => ({ ...rec, expected: 'stopped', process: null, startedAt: null }));
    assert.equal(read().expected, 'stopped');
  });

  await t.test('in a respawn (the record still names the process before, gone): the app is started again', async () => {
    const start = await agentctl(host, ['start', 'web', '--json']);
    assert.equal(start.code, 0, start.stdout + start.stderr);
    const orphan = await crashAfterSpawn(['restart', 'web'], (rec) => rec);
    const now = recordedPid(host, 'web');
    assert.ok(now && now !== orphan && isRunning(now), 'the app runs again, recorded');
  });
});

// Under a real systemd (booted in a container): the unrecorded process is the main process of
// the app's transient unit, found by the instance token in the unit's environment.
const ROOT = '/tmp/steward-e2e/root';
const SCRATCH = '/tmp/steward-e2e/scratch';

test('under systemd, a helper start stops an unrecorded app unit whose process left versions/, then starts the app', { timeout: 180_000 }, async (t) => {
  const box = await bootOrSkip(t);
  if (!box) return;
  const ran: string[] = [];
  t.after(async () => {
    await reportScenarios(box, ran, 1, { units: ['steward-helper.service', 'steward-app-web.service'], lines: 80 });
    await box.stop();
  });
  await shIn(box, 'useradd --system --user-group --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin stwweb');
  await shIn(box, 'mkdir -p -m 0755 /tmp/steward-e2e "$1" "$2" "$1/etc/steward" && chmod 0755 /tmp/steward-e2e "$1" "$2"', ROOT, SCRATCH);
  const config = { apps: { web: { runner: 'process', user: 'stwweb', group: 'stwweb', restart: { baseMs: 100, capMs: 1000, maxAttempts: 5, healthyMs: 60_000 }, stopTimeoutMs: 2000 } }, supervisor: { sweepMs: 500, pollMs: 200 } };
  await writeIn(box, `${ROOT}/etc/steward/steward.json`, JSON.stringify(config));
  const helperUp = () => shIn(box, 'systemctl reset-failed steward-helper.service 2>/dev/null; systemd-run --unit=steward-helper /usr/bin/node "$1/bin/steward-helper.js" --root "$2"', CONTAINER_REPO, ROOT);
  const agentctlIn = async (args: string[]) => {
    const r = await box.exec('/usr/bin/node', [`${CONTAINER_REPO}/bin/agentctl.js`, '--root', ROOT, ...args], { timeoutMs: 60_000 });
    let json: any = null;
    try {
      json = JSON.parse(r.stdout);
    } catch {
      // not JSON
    }
    return { ...r, json, text: r.stdout + r.stderr };
  };
  const ready = () => waitFor('the helper', async () => (await agentctlIn(['status', '--json'])).json?.recovering === false, 30_000, 100);
  await helperUp();
  await ready();
  const port = await freePort();
  const tgz = appRelease('web', '1.0.0', port, { chdir: '/', stableMs: 200 });
  await writeIn(box, `${SCRATCH}/web.tgz`, tgz);
  const up = await agentctlIn(['update', 'web', '1.0.0', '--file', `${SCRATCH}/web.tgz`, '--integrity', sri(tgz), '--allow-unsigned', '--json']);
  assert.equal(up.code, 0, up.text);
  const file = `${ROOT}/var/lib/steward/supervisor/web.json`;
  const first = JSON.parse((await shIn(box, 'cat "$1"', file)).stdout).process;
  assert.equal((await agentctlIn(['restart', 'web'])).code, 0);
  const orphan = JSON.parse((await shIn(box, 'cat "$1"', file)).stdout).process.pid as number;
  assert.notEqual(orphan, first.pid);
  await shIn(box, 'systemctl kill -s KILL steward-helper.service; while systemctl is-active -q steward-helper.service; do sleep 0.1; done; true');
  const rec = JSON.parse((await shIn(box, 'cat "$1"', file)).stdout);
  await writeIn(box, file, JSON.stringify({ ...rec, process: first }));
  await shIn(box, 'chmod 0600 "$1"', file);

  await helperUp();
  await ready();
  const now = await waitFor('the app started again', async () => {
    const s = (await agentctlIn(['status', 'web', '--json'])).json?.apps?.[0]?.supervisor;
    return s?.pid && s.pid !== orphan && s.pid !== first.pid && s.state === 'running' ? s.pid : null;
  }, 30_000, 200);
  const unit = (await box.exec('systemctl', ['show', '-p', 'MainPID', '--value', 'steward-app-web.service'])).stdout.trim();
  assert.equal(Number(unit), now, 'the app unit runs the process the record names');
  assert.notEqual((await box.exec('kill', ['-0', String(orphan)])).code, 0, 'the unrecorded process still runs');
  ran.push('unrecorded unit stopped and the app started');
});
