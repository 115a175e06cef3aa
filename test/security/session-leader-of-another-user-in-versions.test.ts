import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { versionDir } from '../../src/core/paths.js';
import { lookupUser } from '../../src/platform/users.js';
import { freePort, releaseArgs, appRelease } from '../fixtures/app-releases.js';
import { isRunning, recordedPid } from '../helpers/app-processes.js';
import { reportScenarios, shIn, writeIn } from '../helpers/container-exec.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, IS_ROOT, processApp, sri } from '../helpers/host.js';
import { bootOrSkip, CONTAINER_REPO, waitFor } from '../helpers/systemd-container.js';

// Attack: a user who can run a process with its working folder in an app's release trees
// (they are world-readable: any local user can `cd` there) starts a session leader there. The
// root helper took every such session leader for the app and killed it on `agentctl stop`, on
// an update and at its own start, whoever ran it. A process counts as the app's only with a proof
// that only steward could give it (its record, its instance token, its cgroup or unit), and never
// when it runs as another user than the app's.

// Session leaders in versions/1.0.0 that steward did not start: as another user than the app's
// (when root), and as the app's own user without its instance token.
async function strangers(cwd: string): Promise<Array<{ who: string; child: ChildProcess }>> {
  const out: Array<{ who: string; child: ChildProcess }> = [];
  const as = async (who: string, name: string | null) => {
    const u = name ? await lookupUser(name) : null;
    if (name) assert.ok(u, `${name} is in /etc/passwd`);
    const ids = u ? { uid: u.uid, gid: u.gid } : {};
    out.push({ who, child: spawn('sleep', ['300'], { cwd, detached: true, stdio: 'ignore', ...ids }) });
  };
  if (IS_ROOT) {
    await as('another user (daemon)', 'daemon');
    await as("the app's own user (nobody), without its token", 'nobody');
  } else {
    await as("the app's own user (this one), without its token", null);
  }
  return out;
}

test('under the detached runner, stop, update and a helper start leave alone session leaders in versions/ that steward did not start', { timeout: 90_000 }, async (t) => {
  const host = useHost(t, { apps: { web: processApp({ stopTimeoutMs: 1000 }) }, supervisor: { sweepMs: 500, pollMs: 100 } });
  const helper = await host.startHelper();
  const port = await freePort();
  const up = await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port), '--json']);
  assert.equal(up.code, 0, up.stdout + up.stderr);
  const others = await strangers(versionDir(host.paths, 'web', '1.0.0'));
  host.stopFirst(() => {
    for (const o of others) o.child.kill('SIGKILL');
  });
  await waitFor('the strangers', async () => others.every((o) => o.child.pid !== undefined && isRunning(o.child.pid)), 5000, 20);
  const untouched = (when: string) => {
    for (const o of others) assert.ok(isRunning(o.child.pid as number), `${when}: the session leader of ${o.who} was killed`);
  };

  const stop = await agentctl(host, ['stop', 'web', '--json']);
  assert.equal(stop.code, 0, stop.stdout + stop.stderr);
  untouched('agentctl stop');

  const start = await agentctl(host, ['start', 'web', '--json']);
  assert.equal(start.code, 0, start.stdout + start.stderr);
  const next = await agentctl(host, ['update', 'web', '2.0.0', ...releaseArgs(host.scratch, 'web', '2.0.0', port), '--json']);
  assert.equal(next.code, 0, next.stdout + next.stderr);
  assert.equal(next.json.outcome, 'active');
  untouched('an update');

  // A helper start whose record names a process that is gone: it looks for unrecorded ones.
  const app = recordedPid(host, 'web');
  assert.ok(app);
  await helper.stop();
  process.kill(app, 'SIGKILL');
  await waitFor('the app to die', async () => !isRunning(app), 5000, 20);
  await host.startHelper();
  untouched('a helper start');
  const now = recordedPid(host, 'web');
  assert.ok(now && now !== app && isRunning(now), 'the app was started again');
});

// The same under a real systemd (booted in a container), where the app is its own transient
// unit: only that unit is ever stopped. (It held before this change too: pinned here.)
const ROOT = '/tmp/steward-e2e/root';
const SCRATCH = '/tmp/steward-e2e/scratch';

test('under systemd, stop, update and a helper start leave alone a session leader of another user in versions/', { timeout: 180_000 }, async (t) => {
  const box = await bootOrSkip(t);
  if (!box) return;
  const ran: string[] = [];
  t.after(async () => {
    await reportScenarios(box, ran, 1, { units: ['steward-helper.service', 'steward-helper-again.service', 'steward-app-web.service'], lines: 60 });
    await box.stop();
  });
  await shIn(box, 'useradd --system --user-group --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin stwweb && useradd --system --user-group --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin mallory');
  await shIn(box, 'mkdir -p -m 0755 /tmp/steward-e2e "$1" "$2" "$1/etc/steward" && chmod 0755 /tmp/steward-e2e "$1" "$2"', ROOT, SCRATCH);
  await writeIn(box, `${ROOT}/etc/steward/steward.json`, JSON.stringify({ apps: { web: { runner: 'process', user: 'stwweb', group: 'stwweb', stopTimeoutMs: 2000 } } }));
  // KillMode=process, as the installed unit has it: its stop leaves the systemd-run clients be.
  // The second start takes a unit name of its own: with KillMode=process the first unit can stay
  // loaded after its stop while a process it left (a systemd-run client) lingers.
  const helperUp = (unit: string) => shIn(box, 'systemd-run --unit="$3" -p KillMode=process /usr/bin/node "$1/bin/steward-helper.js" --root "$2"', CONTAINER_REPO, ROOT, unit);
  const agentctlIn = async (args: string[]) => {
    const r = await box.exec('/usr/bin/node', [`${CONTAINER_REPO}/bin/agentctl.js`, '--root', ROOT, ...args], { timeoutMs: 60_000 });
    return { ...r, text: r.stdout + r.stderr };
  };
  const ready = () => waitFor('the helper', async () => /"recovering":\s*false/.test((await agentctlIn(['status', '--json'])).stdout), 30_000, 100);
  await helperUp('steward-helper');
  await ready();
  const port = await freePort();
  const update = async (version: string) => {
    const tgz = appRelease('web', version, port);
    await writeIn(box, `${SCRATCH}/web-${version}.tgz`, tgz);
    const r = await agentctlIn(['update', 'web', version, '--file', `${SCRATCH}/web-${version}.tgz`, '--integrity', sri(tgz), '--allow-unsigned', '--json']);
    assert.equal(r.code, 0, r.text);
  };
  await update('1.0.0');
  // mallory's session leader in the release tree, in a unit of its own (as a login session would
  // be; systemd makes a unit's main process a session leader).
  await shIn(box, 'systemd-run --unit=mallory -p User=mallory -p WorkingDirectory="$1/opt/steward/apps/web/versions/1.0.0" /usr/bin/sleep 300', ROOT);
  const mallory = await waitFor('mallory', async () => Number((await box.exec('systemctl', ['show', '-p', 'MainPID', '--value', 'mallory.service'])).stdout.trim()) || null, 10_000, 100);
  const untouched = async (when: string) => {
    const r = await box.exec('kill', ['-0', String(mallory)]);
    assert.equal(r.code, 0, `${when}: mallory's session leader was killed`);
  };
  assert.equal((await agentctlIn(['stop', 'web'])).code, 0);
  await untouched('agentctl stop');
  assert.equal((await agentctlIn(['start', 'web'])).code, 0);
  await update('2.0.0');
  await untouched('an update');
  await shIn(box, 'systemctl stop steward-helper.service && systemctl kill -s KILL steward-app-web.service; true');
  await helperUp('steward-helper-again');
  await ready();
  await untouched('a helper start');
  ran.push('stop, update and helper start');
});
