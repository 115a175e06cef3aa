import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { appRelease, fetchVersion, freePort, type AppBehavior } from '../../fixtures/app-releases.js';
import { sri } from '../../helpers/host.js';
import { bootOrSkip, CONTAINER_REPO, waitFor, type SystemdContainer } from '../../helpers/systemd-container.js';
import { appStatusIn, helperStatusIn, reportScenarios, runIn, shIn, writeIn } from '../../helpers/container-exec.js';
import { controlNodes, controlReceipts, controlRuns } from '../../helpers/control-read.js';

// The fleet under a real systemd 252 (booted in a container; the repository is mounted read-only
// at /opt/src): `agentctl install`, steward-control on the container's loopback (a unit of its
// own), the host enrolled and its agent unit running as `steward`, app `web` trusting the release
// key. Through steward-control: a rollout that updates web, and one whose release fails its probe
// and is rolled back by the helper. Then steward-helper SIGKILLed in the middle of an activation
// and recovered by its unit's restart, with app `other` untouched; and web crash-looping into
// `error` under the installed units until `agentctl restart`.

const AGENTCTL = `${CONTAINER_REPO}/bin/agentctl.js`;
const INSTALLED = '/opt/steward/lib/bin/agentctl.js';
const CONTROL = `${CONTAINER_REPO}/bin/steward-control.js`;
// In a folder of this host's bound there (dbHere): the waits read the store from this side.
const DB_DIR = '/var/tmp/control';
const DB = `${DB_DIR}/control.db`;
const RELEASES = '/var/tmp/releases';
// Made by the test to turn web 2.0.0 into a release that exits as soon as it starts.
const CRASH_FILE = '/var/tmp/web-crash';
const UNITS = ['steward-helper', 'steward-agent', 'steward-control', 'steward-app-web', 'steward-app-other'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// The host config: two process apps as their own users, a restart budget small enough for five
// doubling respawns to fit in a few seconds, and a supervisor that polls adopted apps often.
const restart = { baseMs: 100, capMs: 800, maxAttempts: 5, healthyMs: 60_000 };
const CONFIG = {
  apps: {
    web: { runner: 'process', user: 'stwweb', group: 'stwweb', restart, stopTimeoutMs: 2000 },
    other: { runner: 'process', user: 'stwother', group: 'stwother', restart, stopTimeoutMs: 2000 },
  },
  supervisor: { sweepMs: 500, pollMs: 200 },
};

// `steward-control --db DB ...args --json` inside the container; must succeed.
async function ctl(box: SystemdContainer, ...args: string[]): Promise<any> {
  const r = await runIn(box, '/usr/bin/node', [CONTROL, '--db', DB, ...args, '--json']);
  assert.equal(r.code, 0, `steward-control ${args.join(' ')}: ${r.text}`);
  return r.json;
}

// The installed agentctl as root (admin.sock).
function agentctl(box: SystemdContainer, args: string[]) {
  return runIn(box, '/usr/bin/node', [INSTALLED, ...args], 120_000);
}

async function appStatus(box: SystemdContainer, app: string): Promise<any> {
  const r = await agentctl(box, ['status', app, '--json']);
  assert.equal(r.code, 0, r.text);
  return r.json.apps[0];
}

async function show(box: SystemdContainer, unit: string, props = 'MainPID,ActiveState,InvocationID,User'): Promise<Record<string, string>> {
  const r = await box.exec('systemctl', ['show', '-p', props, '--', unit]);
  return Object.fromEntries(r.stdout.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
}

// Field 22 of /proc/<pid>/stat (the start time): with the pid, the identity of a process.
async function startTicks(box: SystemdContainer, pid: number): Promise<string> {
  const stat = (await box.exec('cat', [`/proc/${pid}/stat`])).stdout;
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
}

// Builds a release here and adds it to steward-control's catalog, signed by the release key.
async function addRelease(box: SystemdContainer, url: string, key: string, app: string, version: string, port: number, behavior: AppBehavior) {
  const tgz = appRelease(app, version, port, behavior);
  const file = `${RELEASES}/${app}-${version}.tgz`;
  await writeIn(box, file, tgz);
  await ctl(box, 'release', 'add', app, version, '--file', file, '--base-url', url, '--key', key);
}

// The waits below read steward-control's store and ask the helper from this process (control-read.ts,
// appStatusIn): a steward-control or agentctl process started inside per poll cost ~0.3 s of CPU.
// What the test asserts it still reads from the CLIs. DB as this process opens it: its folder
// is this host's, bound at DB_DIR (SQLite would resolve /proc/<pid>/root to this host's root).
let dbHere = '';
const dbFrom = (_box: SystemdContainer) => dbHere;

// Starts a rollout of web and waits for its end; returns the run as `rollout status` shows it.
async function rollout(box: SystemdContainer, version: string): Promise<any> {
  await ctl(box, 'rollout', 'start', 'web', version, '--verdict-timeout', '90s', '--bake', '0');
  await waitFor(`the rollout of web ${version} to end`, async () => {
    const [run] = await controlRuns(dbFrom(box), 'web');
    return run?.version === version && run.status !== 'running';
  }, 90_000, 200);
  return (await ctl(box, 'rollout', 'status', 'web')).runs[0];
}

// The receipt steward-control stored for an attempt, once the agent relayed it (as `receipts
// --app web` lists it).
async function receiptOf(box: SystemdContainer, attemptId: string): Promise<any> {
  await waitFor(`the receipt of ${attemptId} at steward-control`, async () => (await controlReceipts(dbFrom(box), 'web')).some((r) => r.attemptId === attemptId), 30_000, 200);
  const { receipts } = await ctl(box, 'receipts', '--app', 'web');
  return receipts.find((r: any) => r.attemptId === attemptId) ?? null;
}

// What the node reported for an app in its last heartbeat.
async function reported(box: SystemdContainer, app: string): Promise<any> {
  const nodes = await controlNodes(dbFrom(box));
  return (nodes[0]?.apps as any[] | undefined)?.find((a: any) => a.name === app) ?? null;
}

test('a fleet under a real systemd: rollouts through steward-control, a rollback, a helper SIGKILLed mid-activation, a crash loop', { timeout: 300_000 }, async (t) => {
  const dbDir = mkdtempSync(path.join(os.tmpdir(), 'steward-fleet-db-'));
  dbHere = path.join(dbDir, path.basename(DB));
  // After the container stops (after hooks run in the order they were added).
  const removeDb = () => rmSync(dbDir, { recursive: true, force: true });
  const box = await bootOrSkip(t, { bind: [[dbDir, DB_DIR]] }).catch((err: unknown) => {
    removeDb();
    throw err;
  });
  if (!box) return removeDb();
  const t0 = Date.now();
  const ran: string[] = [];
  const planned = 6;
  t.after(async () => {
    await reportScenarios(box, ran, planned, { units: UNITS, lines: 150, output: 'short-monotonic' });
    await box.exec('systemctl', ['stop', 'steward-control']);
    await box.stop();
    removeDb();
  });

  // 1. Install, the apps' users, the host config, steward-control, the release key, enrollment.
  const install = await runIn(box, '/usr/bin/node', [AGENTCTL, 'install', '--json'], 180_000);
  assert.equal(install.code, 0, install.text);
  for (const user of ['stwweb', 'stwother']) {
    const add = await runIn(box, 'useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', user]);
    assert.equal(add.code, 0, add.text);
  }
  await shIn(box, 'mkdir -p -m 0755 "$1" && : > "$2" && rm -f "$2"', RELEASES, CRASH_FILE);
  const served = await runIn(box, 'systemd-run', ['--unit=steward-control', '/usr/bin/node', CONTROL, '--db', DB, 'serve', '--init', '--listen', '127.0.0.1:0', '--heartbeat-seconds', '1']);
  assert.equal(served.code, 0, served.text);
  const url = await waitFor('steward-control to listen', async () => {
    const j = (await box.exec('journalctl', ['-u', 'steward-control', '-o', 'cat', '--no-pager'])).stdout;
    return /listening on (\S+)/.exec(j)?.[1] ?? null;
  }, 30_000, 200);
  const keys = await ctl(box, 'keys', 'create', '--out', '/var/tmp/keys');
  await shIn(box, 'mkdir -p -m 0755 /etc/steward/trusted-keys/web && install -m 0644 "$1" /etc/steward/trusted-keys/web/release.pub', keys.publicKeyFile);
  await writeIn(box, '/etc/steward/steward.json', JSON.stringify(CONFIG, null, 2) + '\n');
  assert.equal((await runIn(box, 'systemctl', ['restart', 'steward-helper'])).code, 0);
  await waitFor('the helper with the new config', async () => (await helperStatusIn(box))?.apps?.length === 2, 30_000, 200);

  const webPort = await freePort();
  const otherPort = await freePort();
  // web 2.0.0 is healthy, and exits at once when it starts while CRASH_FILE exists (scenario 5).
  const releases: Array<[string, AppBehavior]> = [
    ['1.0.0', { stableMs: 200 }],
    ['2.0.0', { stableMs: 200, crashAfterMs: 0, crashIfExists: CRASH_FILE }],
    ['3.0.0', { health: 'fail', timeoutMs: 1500, stableMs: 200 }],
    // Healthy, but only after staying up for 15 s: the window to kill the helper in. It costs
    // nothing when the test passes (the kill comes as soon as 4.0.0 listens) and leaves room for
    // a slow, loaded machine to see it.
    ['4.0.0', { stableMs: 15_000 }],
  ];
  for (const [version, behavior] of releases) await addRelease(box, url, keys.privateKeyFile, 'web', version, webPort, behavior);

  const { token } = await ctl(box, 'token', 'create');
  const enroll = await agentctl(box, ['enroll', '--control-plane', url, '--token', token, '--json']);
  assert.equal(enroll.code, 0, enroll.text);
  assert.equal((await runIn(box, 'systemctl', ['enable', '--now', 'steward-agent'])).code, 0);
  await waitFor('a heartbeat from the agent unit', async () => (await controlNodes(dbFrom(box)))[0]?.lastHeartbeatAt, 30_000, 200);

  // `other` is installed by hand (admin.sock, unsigned): no rollout ever names it.
  const otherTgz = appRelease('other', '1.0.0', otherPort, { stableMs: 200 });
  await writeIn(box, `${RELEASES}/other-1.0.0.tgz`, otherTgz);
  const other = await agentctl(box, ['update', 'other', '1.0.0', '--file', `${RELEASES}/other-1.0.0.tgz`, '--integrity', sri(otherTgz), '--allow-unsigned', '--json']);
  assert.equal(other.code, 0, other.text);
  const first = await rollout(box, '1.0.0');
  assert.equal(first.status, 'succeeded', JSON.stringify(first));
  assert.equal((await show(box, 'steward-app-web.service')).User, 'stwweb');
  assert.equal((await show(box, 'steward-agent.service')).User, 'steward');
  ran.push('install + steward-control + enroll + web 1.0.0 by rollout');

  await t.test('a rollout through steward-control updates web from 1.0.0 to 2.0.0', async () => {
    const run = await rollout(box, '2.0.0');
    assert.equal(run.status, 'succeeded', JSON.stringify(run));
    assert.deepEqual(run.nodes.map((n: any) => [n.nodeId, n.state, n.outcome]), [[enroll.json.nodeId, 'confirmed', 'active']]);
    const receipt = await receiptOf(box, run.nodes[0].attemptId);
    assert.deepEqual([receipt.fromVersion, receipt.targetVersion, receipt.outcome, receipt.counts], ['1.0.0', '2.0.0', 'active', true]);
    await waitFor('the node to report 2.0.0', async () => (await reported(box, 'web'))?.current === '2.0.0', 15_000, 500);
    assert.equal(await fetchVersion(webPort), '2.0.0');
    ran.push('rollout 1.0.0 -> 2.0.0 confirmed');
  });

  await t.test('a release failing its probe is rolled back by the helper and halts the run', async () => {
    const run = await rollout(box, '3.0.0');
    assert.equal(run.status, 'halted', JSON.stringify(run));
    assert.equal(run.nodes[0].outcome, 'rolled-back');
    const receipt = await receiptOf(box, run.nodes[0].attemptId);
    assert.deepEqual([receipt.fromVersion, receipt.targetVersion, receipt.outcome, receipt.reasonCode], ['2.0.0', '3.0.0', 'rolled-back', 'REPLACEMENT_UNHEALTHY']);
    const web = await appStatus(box, 'web');
    assert.equal(web.current, '2.0.0');
    assert.deepEqual([web.supervisor.state, web.supervisor.version], ['running', '2.0.0']);
    assert.equal(Number((await show(box, 'steward-app-web.service')).MainPID), web.supervisor.pid);
    assert.equal(await fetchVersion(webPort), '2.0.0');
    ran.push('3.0.0 rolled back (REPLACEMENT_UNHEALTHY), run halted');
  });

  await t.test('steward-helper SIGKILLed during an activation: systemd restarts it, recovery ends the transaction, other is untouched', async () => {
    const otherBefore = await show(box, 'steward-app-other.service');
    const otherPid = Number(otherBefore.MainPID);
    assert.ok(otherPid > 0, JSON.stringify(otherBefore));
    const otherTicks = await startTicks(box, otherPid);
    const helperBefore = Number((await show(box, 'steward-helper.service')).MainPID);
    const cursor = (await box.exec('journalctl', ['-n', '0', '--show-cursor', '--no-pager'])).stdout.match(/cursor: (\S+)/)?.[1] ?? '';

    await ctl(box, 'rollout', 'start', 'web', '4.0.0', '--verdict-timeout', '90s', '--bake', '0');
    // In the middle of the activation: 4.0.0 is up and listening, its stability window open.
    const attemptId = await waitFor('web 4.0.0 to be up and probed', async () => {
      const web = await appStatusIn(box, 'web');
      if (web?.running?.phase !== 'start') return null;
      const j = (await box.exec('journalctl', ['-u', 'steward-app-web', '--after-cursor', cursor, '-o', 'cat', '--no-pager'])).stdout;
      return j.includes(`listening ${webPort} version 4.0.0`) ? (web.running.attemptId as string) : null;
    }, 60_000, 100);
    const kill = await box.exec('systemctl', ['kill', '--kill-who=main', '-s', 'SIGKILL', 'steward-helper']);
    assert.equal(kill.code, 0, kill.stderr);

    await waitFor('systemd to restart the helper', async () => {
      const h = await show(box, 'steward-helper.service');
      return Number(h.MainPID) > 0 && Number(h.MainPID) !== helperBefore && h.ActiveState === 'active';
    }, 15_000, 100);
    const web = await waitFor('recovery to finish', () => appStatusIn(box, 'web'), 60_000, 200);
    // current is a complete release again, and the journal is terminal.
    assert.equal(web.current, '2.0.0');
    assert.equal(web.currentState, 'valid');
    assert.equal((await runIn(box, 'readlink', ['/opt/steward/apps/web/current'])).stdout.trim(), 'versions/2.0.0');
    assert.equal((await runIn(box, 'test', ['-f', '/opt/steward/apps/web/versions/2.0.0/.steward-valid'])).code, 0);
    const journal = JSON.parse((await runIn(box, 'cat', ['/var/lib/steward/journal/web.json'])).stdout);
    assert.deepEqual([journal.attemptId, journal.outcome, journal.reason?.code], [attemptId, 'rolled-back', 'ACTIVATION_INTERRUPTED']);
    // A signed receipt on the host, relayed to steward-control, which halts the run.
    const local = await agentctl(box, ['receipts', 'web', '--json']);
    assert.equal(local.code, 0, local.text);
    const mine = local.json.receipts.filter((r: any) => r.payload?.attemptId === attemptId);
    assert.deepEqual(mine.map((r: any) => [r.verified, r.payload.outcome, r.payload.reason?.code]), [[true, 'rolled-back', 'ACTIVATION_INTERRUPTED']], local.text);
    const receipt = await receiptOf(box, attemptId);
    assert.deepEqual([receipt.outcome, receipt.reasonCode, receipt.targetVersion, receipt.seq], ['rolled-back', 'ACTIVATION_INTERRUPTED', '4.0.0', mine[0].seq]);
    // Exactly once, and no seq lost to the kill.
    const { receipts } = await ctl(box, 'receipts');
    assert.equal(receipts.filter((r: any) => r.attemptId === attemptId).length, 1);
    assert.deepEqual((await ctl(box, 'nodes')).nodes[0].receiptLost, []);
    await waitFor('the run to halt', async () => (await controlRuns(dbFrom(box), 'web'))[0]?.status !== 'running', 30_000, 200);
    const run = (await ctl(box, 'rollout', 'status', 'web')).runs[0];
    assert.equal(run.status, 'halted', JSON.stringify(run));
    // web runs 2.0.0 again, and other was not part of it: the same unit, process and start time.
    const webNow = await waitFor('web to run 2.0.0', async () => {
      const a = await appStatusIn(box, 'web');
      return a?.supervisor?.state === 'running' && a.supervisor.version === '2.0.0' ? a : null;
    }, 15_000, 200);
    assert.equal(Number((await show(box, 'steward-app-web.service')).MainPID), webNow.supervisor.pid);
    assert.equal(await fetchVersion(webPort), '2.0.0');
    const otherAfter = await show(box, 'steward-app-other.service');
    assert.deepEqual(otherAfter, otherBefore, 'the unit of other is unchanged');
    assert.equal(await startTicks(box, otherPid), otherTicks, 'the very same process');
    const otherStatus = await appStatus(box, 'other');
    assert.deepEqual([otherStatus.supervisor.state, otherStatus.supervisor.pid], ['running', otherPid]);
    assert.equal(await fetchVersion(otherPort), '1.0.0');
    ran.push(`helper SIGKILLed mid-activation -> ${journal.outcome} ${journal.reason.code}, other pid ${otherPid} kept`);
  });

  await t.test('web crash-looping under the installed units ends in error with no 6th respawn; agentctl restart starts it', async () => {
    const before = await appStatus(box, 'web');
    assert.deepEqual([before.supervisor.state, before.supervisor.attempts], ['running', 0]);
    const cursor = (await box.exec('journalctl', ['-n', '0', '--show-cursor', '--no-pager'])).stdout.match(/cursor: (\S+)/)?.[1] ?? '';
    // From now on 2.0.0 exits with code 3 as soon as it starts; one kill starts the loop.
    await shIn(box, 'touch "$1" && chmod 0644 "$1" && kill -KILL "$2"', CRASH_FILE, String(before.supervisor.pid));
    const gaveUp = await waitFor('web to be in error', async () => {
      const a = await appStatusIn(box, 'web');
      return a?.supervisor?.state === 'error' ? a : null;
    }, 30_000, 200);
    assert.equal(gaveUp.supervisor.attempts, 5);
    assert.match(gaveUp.supervisor.giveUpReason, /gave up after 5 respawns.*code 3/);
    // Several backoff caps later: still error, and systemd started the unit exactly 5 times.
    // Counted by its "Starting" lines: a start whose process exits before its job is done logs
    // "Failed to start" instead of "Started" (seen under load), and is a respawn all the same.
    await sleep(2 * restart.capMs + 500);
    assert.equal((await appStatus(box, 'web')).supervisor.state, 'error', 'no 6th respawn');
    const starts = (await box.exec('journalctl', ['-u', 'steward-app-web', '--after-cursor', cursor, '-o', 'cat', '--no-pager'])).stdout.split('\n').filter((l) => /^Starting /.test(l));
    assert.equal(starts.length, 5, `five respawns:\n${starts.join('\n')}`);
    assert.notEqual((await show(box, 'steward-app-web.service')).ActiveState, 'active');

    await shIn(box, 'rm -f "$1"', CRASH_FILE);
    const r = await agentctl(box, ['restart', 'web', '--json']);
    assert.equal(r.code, 0, r.text);
    const revived = await appStatus(box, 'web');
    assert.deepEqual([revived.supervisor.state, revived.supervisor.attempts, revived.supervisor.version], ['running', 0, '2.0.0']);
    assert.equal(Number((await show(box, 'steward-app-web.service')).MainPID), revived.supervisor.pid);
    assert.equal(await waitFor('web to answer', () => fetchVersion(webPort), 10_000, 200), '2.0.0');
    ran.push('crash loop -> error after 5 respawns -> agentctl restart');
  });

  await t.test("after all that, the steward user owns nothing of root's and only helper.sock is writable by others", async () => {
    // Symlinks always read 0777 (their mode means nothing on Linux), so -perm only for the rest.
    const r = await runIn(box, 'find', ['/opt/steward', '/etc/steward', '/var/lib/steward', '/run/steward', '/var/log/steward', '(', '-user', 'steward', '-o', '(', '-perm', '/022', '!', '-type', 'l', ')', ')']);
    assert.equal(r.code, 0, r.text);
    assert.deepEqual(r.stdout.split('\n').filter(Boolean), ['/run/steward/helper.sock']);
    ran.push('find after the fleet scenarios: only helper.sock');
  });

  console.log(`whole test (boot excluded): ${Date.now() - t0} ms`);
});
