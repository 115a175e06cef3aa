import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { systemClock } from '../../src/platform/clock.js';
import { lookupUser } from '../../src/platform/users.js';
import { findCgroupHome, removeCgroupHome } from '../../src/helper/runners/app-cgroup.js';
import { createProcessRunner } from '../../src/helper/runners/process-runner.js';
import type { StartSpec } from '../../src/helper/runners/runner.js';
import { appFiles, appRelease, freePort, releaseArgs } from '../fixtures/app-releases.js';
import { killDaemons, recordedPid, registeredDaemons, type Daemon } from '../helpers/app-processes.js';
import { reportScenarios, shIn, writeIn } from '../helpers/container-exec.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, IS_ROOT, processApp, sri } from '../helpers/host.js';
import { skipUnlessCI } from '../helpers/skip.js';
import { bootOrSkip, CONTAINER_REPO, waitFor } from '../helpers/systemd-container.js';

// Attack (or a plain bug in an app): an app that daemonizes children, then crashes. The
// supervisor respawned it and each crash left its daemons behind, out of the app's process group
// and session (five session leaders for one tracked app after a crash loop), holding ports,
// memory and files. docs/design.md §5: exactly one live instance, so when an app's main process ends,
// everything it started ends with it: under the detached runner (by its cgroup or its instance
// token) and under systemd (the unit's cgroup, KillMode=mixed).

const alive = (ds: Daemon[], main?: number) => ds.filter((d) => d.alive && (main === undefined || d.main === main));

test('under the detached runner, a crashed app takes its daemons with it: as the helper child, once adopted, and in a crash loop', { timeout: 120_000 }, async (t) => {
  const host = useHost(t, {
    apps: { web: processApp({ restart: { baseMs: 0, capMs: 0, maxAttempts: 3, healthyMs: 600_000 }, stopTimeoutMs: 2000 }) },
    supervisor: { sweepMs: 500, pollMs: 100 },
  });
  const stateDir = path.join(host.paths.appStateRoot, 'web');
  const helper = await host.startHelper();
  const port = await freePort();
  const up = await agentctl(host, ['update', 'web', '1.0.0', ...releaseArgs(host.scratch, 'web', '1.0.0', port, { daemons: 2, stableMs: 200 }), '--json']);
  assert.equal(up.code, 0, up.stdout + up.stderr);

  // Kills the app's main process once its two daemons run, and waits until the record names the
  // process that replaced it: by then nothing of the killed one may run.
  const crash = async (label: string) => {
    const old = await waitFor(`web with its daemons (${label})`, async () => {
      const pid = recordedPid(host, 'web');
      return pid !== null && alive(registeredDaemons(stateDir), pid).length === 2 ? pid : null;
    }, 30_000, 50);
    process.kill(old, 'SIGKILL');
    const now = await waitFor(`the respawn (${label})`, async () => {
      const pid = recordedPid(host, 'web');
      return pid !== null && pid !== old ? pid : null;
    }, 30_000, 20);
    assert.deepEqual(alive(registeredDaemons(stateDir), old), [], `${label}: the daemons of the crashed process ${old} outlived it`);
    return now;
  };

  await t.test("the helper's own child", async () => {
    await crash('child');
  });

  await t.test('an adopted process (the helper restarted in between)', async () => {
    await helper.stop();
    await host.startHelper();
    await crash('adopted');
  });

  await t.test('a crash loop given up on leaves no daemon of any of its processes', async () => {
    const loop = await agentctl(host, ['update', 'web', '2.0.0', ...releaseArgs(host.scratch, 'web', '2.0.0', port, { daemons: 2, crashAfterMs: 1000, stableMs: 200, watchMs: 0 }), '--json']);
    assert.equal(loop.code, 0, loop.stdout + loop.stderr);
    await waitFor('error', async () => (await agentctl(host, ['status', 'web', '--json'])).json?.apps?.[0]?.supervisor?.state === 'error', 60_000, 100);
    const all = registeredDaemons(stateDir);
    assert.ok(all.length >= 8, `the processes of the crash loop registered their daemons: ${all.length} in all`);
    assert.deepEqual(alive(all), [], 'daemons of the crash loop outlived it');
  });
});

// The runner alone, with each proof it can use: the instance token in the environment (no
// cgroup: not root, or no writable cgroup2 here), and the app's own cgroup (root).
for (const proof of ['instance token', 'cgroup'] as const) {
  test(`the process runner kills what a main process started before it reports its exit (${proof})`, async (t) => {
    const base = mkdtempSync(path.join(os.tmpdir(), 'steward-daemons-'));
    chmodSync(base, 0o755);
    const cgroups = proof === 'cgroup' ? findCgroupHome(base) : null;
    t.after(() => {
      killDaemons(path.join(base, 'lib', 'web'));
      rmSync(base, { recursive: true, force: true });
      if (cgroups) removeCgroupHome(cgroups);
    });
    if (proof === 'cgroup' && !cgroups) {
      if (!IS_ROOT) return skipUnlessCI(t, 'an app cgroup needs root');
      console.log('skipping: no writable cgroup2 hierarchy here (or systemd is PID 1); the instance token case covers this host');
      return t.skip('no writable cgroup2 hierarchy');
    }
    const spec = await appSpec(t, base);
    const runner = createProcessRunner({ clock: systemClock, isRoot: IS_ROOT, cgroups });
    const keepAlive = setInterval(() => {}, 1000);
    t.after(() => clearInterval(keepAlive));
    const started = await runner.start(spec);
    const main = started.identity.pid;
    await waitFor('two daemons', async () => alive(registeredDaemons(spec.stateDir), main).length === 2, 15_000, 20);
    process.kill(main, 'SIGKILL');
    assert.deepEqual(await started.exited, { code: null, signal: 'SIGKILL' });
    assert.deepEqual(alive(registeredDaemons(spec.stateDir)), [], 'a daemon outlived the reported exit');
  });
}

// A release tree of the test app in `base`, started as a helper would start it (its own user when
// root), with two daemons.
async function appSpec(t: TestContext, base: string): Promise<StartSpec> {
  const cwd = path.join(base, 'versions', '1.0.0');
  mkdirSync(cwd, { recursive: true, mode: 0o755 });
  for (const f of appFiles()) writeFileSync(path.join(cwd, f.path), f.content, { mode: 0o644 });
  const runAs = IS_ROOT ? await lookupUser('nobody') : null;
  if (IS_ROOT) assert.ok(runAs, 'nobody is in /etc/passwd');
  t.diagnostic(`the app runs as ${runAs?.name ?? os.userInfo().username}`);
  return {
    app: 'web',
    version: '1.0.0',
    cwd,
    command: [process.execPath, 'server.js'],
    env: { PORT: String(await freePort()), BEHAVIOR: JSON.stringify({ daemons: 2 }) },
    runAs,
    logFile: path.join(base, 'log', 'web.log'),
    stateDir: path.join(base, 'lib', 'web'),
    instance: randomBytes(16).toString('hex'),
  };
}

// The same under a real systemd (booted in a container): the app is its own transient unit,
// whose cgroup holds its daemons; when its main process dies, systemd kills them (KillMode=mixed)
// before the helper hears the exit and respawns it. (It held before this change too: pinned here.)
const ROOT = '/tmp/steward-e2e/root';
const SCRATCH = '/tmp/steward-e2e/scratch';
const HELPER_UNIT = 'steward-helper.service';
const STATE = `${ROOT}/var/lib/steward-apps/web`;

test('under systemd, a crashed app takes its daemons with it, and agentctl logs reads its journal', { timeout: 180_000 }, async (t) => {
  const box = await bootOrSkip(t);
  if (!box) return;
  const ran: string[] = [];
  t.after(async () => {
    await reportScenarios(box, ran, 2, { units: [HELPER_UNIT, 'steward-app-web.service'], lines: 60 });
    await box.stop();
  });
  const user = 'stwweb';
  await shIn(box, 'useradd --system --user-group --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin "$1"', user);
  await shIn(box, 'mkdir -p -m 0755 /tmp/steward-e2e "$1" "$2" "$1/etc/steward" && chmod 0755 /tmp/steward-e2e "$1" "$2"', ROOT, SCRATCH);
  const config = { apps: { web: { runner: 'process', user, group: user, restart: { baseMs: 100, capMs: 1000, maxAttempts: 5, healthyMs: 60_000 }, stopTimeoutMs: 2000 } }, supervisor: { sweepMs: 500, pollMs: 200 } };
  await writeIn(box, `${ROOT}/etc/steward/steward.json`, JSON.stringify(config));
  await shIn(box, 'systemd-run --unit=steward-helper /usr/bin/node "$1/bin/steward-helper.js" --root "$2"', CONTAINER_REPO, ROOT);
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
  await waitFor('the helper', async () => (await agentctlIn(['status', '--json'])).json?.recovering === false, 30_000, 100);
  const port = await freePort();
  const tgz = appRelease('web', '1.0.0', port, { daemons: 2, stableMs: 200 });
  await writeIn(box, `${SCRATCH}/web.tgz`, tgz);
  const up = await agentctlIn(['update', 'web', '1.0.0', '--file', `${SCRATCH}/web.tgz`, '--integrity', sri(tgz), '--allow-unsigned', '--json']);
  assert.equal(up.code, 0, up.text);

  // The daemons registered in the app's state folder inside the container, and whether each runs.
  const daemons = async () => {
    const r = await box.exec('/bin/sh', ['-c', 'cd "$1/daemons" 2>/dev/null || exit 0; for n in *-*; do p=${n#*-}; s=$(cut -d" " -f3 /proc/$p/stat 2>/dev/null); echo "$n ${s:-gone}"; done', 'sh', STATE]);
    return r.stdout.split('\n').filter((l) => /^\d+-\d+ /.test(l)).map((l) => {
      const [name, state] = l.split(' ');
      const [main, pid] = (name as string).split('-').map(Number);
      return { main: main as number, pid: pid as number, alive: state !== 'gone' && state !== 'Z' };
    });
  };
  const pidOf = async () => (await agentctlIn(['status', 'web', '--json'])).json?.apps?.[0]?.supervisor?.pid as number | undefined;

  await t.test('the daemons of a killed main process are gone once it is respawned', async () => {
    const old = await waitFor('web with its daemons', async () => {
      const pid = await pidOf();
      return pid && alive(await daemons(), pid).length === 2 ? pid : null;
    }, 30_000, 100);
    await shIn(box, 'kill -KILL "$1"', String(old));
    await waitFor('the respawn', async () => {
      const pid = await pidOf();
      return pid && pid !== old ? pid : null;
    }, 30_000, 50);
    assert.deepEqual(alive(await daemons(), old), [], 'the daemons of the killed process outlived it');
    ran.push('daemons end with their main process');
  });

  await t.test('agentctl logs web reads the app unit journal', async () => {
    const r = await waitFor('the journal lines', async () => {
      const l = await agentctlIn(['logs', 'web', '-n', '50', '--json']);
      return l.code === 0 && l.json?.lines?.some((x: string) => x.includes(`listening ${port}`)) ? l : null;
    }, 10_000, 200);
    assert.equal(r.json.source, 'journal');
    assert.equal(r.json.unit, 'steward-app-web.service');
    const human = await agentctlIn(['logs', 'web', '-n', '3']);
    assert.equal(human.code, 0, human.text);
    assert.equal(human.stdout.trim().split('\n').length, 3, human.stdout);
    ran.push('agentctl logs from journald');
  });
});
