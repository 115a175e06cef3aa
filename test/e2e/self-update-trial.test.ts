// Self-update (docs/design.md §14) through the real launcher and real helpers under a root prefix: a good
// version commits; one that exits at start, hangs, or binds and fails its self-check, and a
// candidate or an old helper killed with SIGKILL during the handover, each run the candidate at
// most once, leave one `current`, keep the apps running and unblocked, and end in a receipt.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { callHelper } from '../../src/protocol/client.js';
import { helperReceipts, helperStatus } from '../helpers/helper-status.js';
import { agentctl, processApp } from '../helpers/host.js';
import { freePort, releaseArgs } from '../fixtures/app-releases.js';
import { cleanedUpAfter, currentOf, exited, makeSelfHost, ranVersions, startLauncher, stewardRelease, upgradePackage, waitReady, type SelfHost } from '../helpers/self-host.js';
import { skipUnlessCI } from '../helpers/skip.js';

const IS_ROOT = process.getuid?.() === 0;
const { children, hosts } = cleanedUpAfter();

async function host(stableMs = 300): Promise<{ h: SelfHost; webPid: number; launch: (env?: Record<string, string>) => ChildProcess }> {
  const h = await makeSelfHost('1.0.0', { apps: { steward: { runner: 'self', stableMs }, web: processApp() }, supervisor: { processRunner: 'detached' } });
  hosts.push(h);
  const launch = (env: Record<string, string> = {}) => {
    const c = startLauncher(h, env);
    children.push(c);
    return c;
  };
  const first = launch();
  await waitReady(h, first);
  const port = await freePort();
  const web = await agentctl(h, ['update', 'web', '1.0.0', ...releaseArgs(h.scratch, 'web', '1.0.0', port), '--json']);
  assert.equal(web.json?.outcome, 'active', web.stdout + web.stderr + (web.json?.logFile ? readFileSync(web.json.logFile, 'utf8') : ''));
  const webPid = await pidOf(h, 'web');
  await stopHelper(first);
  return { h, webPid, launch };
}

// A host whose steward release 2.0.0 went through its trial and committed, its helper stopped.
async function committedHost(): Promise<Awaited<ReturnType<typeof host>>> {
  const setup = await host();
  const old = setup.launch();
  await waitReady(setup.h, old);
  await updateSteward(setup.h, old, '2.0.0', 'good');
  const released = setup.launch();
  await waitReady(setup.h, released);
  await stopHelper(released);
  return setup;
}

async function stopHelper(c: ChildProcess): Promise<void> {
  c.kill('SIGTERM');
  await exited(c);
}

// The helper's status (`agentctl status --json`'s), asked from this process (helper-status.ts):
// an agentctl per read was ~0.2 s of CPU, a dozen times a case. `status --check` is agentctl's.
async function status(h: SelfHost): Promise<any> {
  const s = await helperStatus(h.root);
  assert.ok(s, 'the helper answers its status');
  return s;
}

async function pidOf(h: SelfHost, app: string): Promise<number> {
  const a = (await status(h)).apps.find((x: any) => x.name === app);
  assert.ok(a?.supervisor?.pid > 0, JSON.stringify(a));
  return a.supervisor.pid as number;
}

function selfFile(h: SelfHost, name: string): string | null {
  const f = path.join(h.paths.selfDir, name);
  return existsSync(f) ? readFileSync(f, 'utf8') : null;
}

async function steward(h: SelfHost): Promise<any> {
  return (await status(h)).apps.find((x: any) => x.name === 'steward');
}

// `agentctl receipts steward --json`'s receipts, each verified against helper.pub.
async function stewardReceipts(h: SelfHost): Promise<any[]> {
  const receipts = await helperReceipts(h.root, 'steward');
  assert.deepEqual(receipts.filter((r) => !r.verified), [], 'every receipt verifies against helper.pub');
  return receipts;
}

// Asks for the update of steward to `version` from the helper `c`, which the handover ends.
// `overHelperSock`: the way a rollout's update reaches the helper (the agent's socket, the
// tarball uploaded), which may update steward, never roll it back or stop it.
async function updateSteward(h: SelfHost, c: ChildProcess, version: string, behaviour: Parameters<typeof stewardRelease>[2], overHelperSock = false): Promise<string> {
  const rel = await stewardRelease(h, version, behaviour);
  const socket = overHelperSock ? ['--socket', h.paths.helperSock] : [];
  const r = await agentctl(h, [...socket, 'update', 'steward', version, '--file', rel.tgz, '--manifest', rel.manifest, '--json']);
  assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
  assert.equal(r.json?.accepted, true, r.stdout);
  assert.equal(await exited(c), 0, 'the restart the handover asked for ends the old helper');
  // The old helper wrote `candidate` and never moved `current`.
  assert.match(selfFile(h, 'candidate') ?? '', new RegExp(`"version":"${version}"`));
  assert.equal(currentOf(h), null);
  return r.json.attemptId as string;
}

// What every case checks once a helper is back: it ran the candidate at most once, one version
// is current (or none, the package's floor), the app is still the same process and unblocked,
// and a receipt of the attempt tells what happened.
async function checkSettled(h: SelfHost, webPid: number, attemptId: string, expect: { outcome: string; version: string; code?: string }): Promise<void> {
  const ran = ranVersions(h);
  assert.ok(ran.filter((v) => v === '2.0.0').length <= 1, `the candidate ran at most once: ${ran.join(',')}`);
  const s = await steward(h);
  assert.equal(s.self.version, expect.version);
  assert.equal(s.current, expect.outcome === 'active' ? '2.0.0' : null);
  assert.equal(selfFile(h, 'trying'), null);
  assert.equal(selfFile(h, 'reverted'), null);
  assert.equal(await pidOf(h, 'web'), webPid, 'the app kept running through the trial');
  const web = (await status(h)).apps.find((x: any) => x.name === 'web');
  assert.equal(web.blocked, null);
  const receipt = (await stewardReceipts(h)).find((r: any) => (r.payload ?? r).attemptId === attemptId);
  assert.ok(receipt, `a receipt of ${attemptId}`);
  const p = receipt.payload ?? receipt;
  assert.equal(p.outcome, expect.outcome);
  if (expect.code) assert.equal(p.reason?.code, expect.code);
  if (expect.outcome !== 'active') assert.deepEqual(s.quarantined, ['2.0.0']);
}

test('a good new steward version, asked for over helper.sock as a rollout is, runs once on trial, commits, and ends active with the apps untouched', { timeout: 120_000 }, async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'needs root: the process app runs as nobody');
  const { h, webPid, launch } = await host();
  const old = launch();
  assert.equal((await waitReady(h, old)).apps.find((a: any) => a.name === 'steward').self.decision, 'package');
  const attemptId = await updateSteward(h, old, '2.0.0', 'good', true);
  const next = launch();
  await waitReady(h, next);
  assert.equal((await steward(h)).self.decision, 'trial');
  await checkSettled(h, webPid, attemptId, { outcome: 'active', version: '2.0.0' });
  // The next start runs the committed version as `current`.
  await stopHelper(next);
  const again = launch();
  await waitReady(h, again);
  assert.equal((await steward(h)).self.decision, 'current');
  assert.deepEqual(ranVersions(h), ['1.0.0', '1.0.0', '2.0.0', '2.0.0']);
  await stopHelper(again);
});

test("an apt upgrade to a package newer than the committed release runs the package's version through the trial, which commits it", { timeout: 120_000 }, async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'needs root: the process app runs as nobody');
  const { h, webPid, launch } = await committedHost();
  assert.equal(currentOf(h), 'versions/2.0.0');
  await upgradePackage(h, '3.0.0');
  const pkg = launch();
  await waitReady(h, pkg);
  const s = await steward(h);
  assert.deepEqual([s.self.version, s.self.decision, s.current], ['3.0.0', 'trial', '3.0.0']);
  assert.equal(currentOf(h), 'versions/3.0.0', "the package's tree was staged into versions/ and committed");
  const receipt = (await stewardReceipts(h)).map((r: any) => r.payload ?? r).find((p: any) => p.targetVersion === '3.0.0');
  assert.deepEqual([receipt?.outcome, receipt?.fromVersion], ['active', '2.0.0']);
  assert.equal(await pidOf(h, 'web'), webPid);
  await stopHelper(pkg);
  // Tried once: the next start runs it as `current`.
  const again = launch();
  await waitReady(h, again);
  assert.equal((await steward(h)).self.decision, 'current');
  assert.deepEqual(ranVersions(h), ['1.0.0', '1.0.0', '2.0.0', '3.0.0', '3.0.0']);
  await stopHelper(again);
});

test('an apt upgrade to a package newer than the committed release that fails its self-check is tried once, and the release runs again', { timeout: 120_000 }, async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'needs root: the process app runs as nobody');
  const { h, webPid, launch } = await committedHost();
  await upgradePackage(h, '3.0.0', 'wrong-version');
  const pkg = launch();
  assert.notEqual(await exited(pkg), 0);
  const back = launch();
  await waitReady(h, back);
  const s = await steward(h);
  assert.deepEqual([s.self.version, s.current, s.quarantined], ['2.0.0', '2.0.0', ['3.0.0']]);
  // Said plainly (issue 31 item 1): the package's version reverted, an older steward runs.
  assert.equal(s.self.packageReverted?.version, '3.0.0', JSON.stringify(s.self));
  assert.match(s.self.packageReverted.message, /the package's steward 3\.0\.0 was tried and REVERTED: steward 2\.0\.0 runs/);
  assert.deepEqual([s.supervisor?.state, s.supervisor?.pid], ['running', back.pid], 'the app steward is the helper, which runs');
  const check = await agentctl(h, ['status', '--check']);
  assert.equal(check.code, 1, check.stderr);
  assert.match(check.stderr, /agentctl: check: steward: REVERTED: the package's steward 3\.0\.0/);
  const receipt = (await stewardReceipts(h)).map((r: any) => r.payload ?? r).find((p: any) => p.targetVersion === '3.0.0');
  assert.deepEqual([receipt?.outcome, receipt?.reason?.code], ['rolled-back', 'REPLACEMENT_UNHEALTHY']);
  assert.equal(await pidOf(h, 'web'), webPid);
  await stopHelper(back);
  const again = launch();
  await waitReady(h, again);
  assert.equal((await steward(h)).self.decision, 'current', 'the package version is not tried again');
  assert.deepEqual(ranVersions(h).filter((v) => v === '3.0.0'), ['3.0.0']);
  await stopHelper(again);
});

test('a committed version that never got ready 3 starts in a row is set aside: the package runs and reports FALLBACK in status and a receipt', { timeout: 120_000 }, async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'needs root: the process app runs as nobody');
  const { h, webPid, launch } = await committedHost();
  // Three starts of 2.0.0 that never got ready, as the launcher counts them.
  writeFileSync(path.join(h.paths.selfDir, 'starts'), '{"schemaVersion":1,"version":"2.0.0","starts":3}\n');
  const floor = launch();
  await waitReady(h, floor);
  const s = await steward(h);
  assert.deepEqual([s.self.version, s.self.decision, s.self.fallback?.code, s.self.fallback?.version], ['1.0.0', 'fallback', 'FALLBACK', '2.0.0']);
  const receipt = (await stewardReceipts(h)).map((r: any) => r.payload ?? r).find((p: any) => p.reason?.code === 'FALLBACK');
  assert.deepEqual([receipt?.outcome, receipt?.fromVersion, receipt?.targetVersion], ['failed', '2.0.0', '1.0.0']);
  assert.equal(await pidOf(h, 'web'), webPid);
  // One receipt per fallback, however often the floor starts.
  await stopHelper(floor);
  const again = launch();
  await waitReady(h, again);
  assert.equal((await stewardReceipts(h)).filter((r: any) => (r.payload ?? r).reason?.code === 'FALLBACK').length, 1);
  await stopHelper(again);
});

for (const [behaviour, what] of [
  ['exit', 'exits at its start'],
  ['wrong-version', 'binds its sockets and fails its self-check'],
] as const) {
  test(`a steward version that ${what} runs once, and the package's version closes it rolled-back and quarantined`, { timeout: 120_000 }, async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'needs root: the process app runs as nobody');
    const { h, webPid, launch } = await host();
    const old = launch();
    await waitReady(h, old);
    const attemptId = await updateSteward(h, old, '2.0.0', behaviour);
    const candidate = launch();
    assert.notEqual(await exited(candidate), 0, 'the candidate never gets ready');
    const back = launch();
    await waitReady(h, back);
    await checkSettled(h, webPid, attemptId, { outcome: 'rolled-back', version: '1.0.0', code: 'REPLACEMENT_UNHEALTHY' });
    await stopHelper(back);
  });
}

test('a steward version that hangs before binding its sockets, ended by the start timeout, runs once', { timeout: 120_000 }, async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'needs root: the process app runs as nobody');
  const { h, webPid, launch } = await host();
  const old = launch();
  await waitReady(h, old);
  const attemptId = await updateSteward(h, old, '2.0.0', 'hang');
  const candidate = launch();
  await waitFor(() => ranVersions(h).includes('2.0.0'));
  // systemd's TimeoutStartSec: a SIGKILL of the unready start.
  candidate.kill('SIGKILL');
  await exited(candidate);
  const back = launch();
  await waitReady(h, back);
  await checkSettled(h, webPid, attemptId, { outcome: 'rolled-back', version: '1.0.0', code: 'REPLACEMENT_UNHEALTHY' });
  await stopHelper(back);
});

test('a SIGKILL of the candidate during its probe reverts it; one of the old helper during the handover still runs the candidate once', { timeout: 120_000 }, async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'needs root: the process app runs as nobody');
  const { h, webPid, launch } = await host(60_000);
  // The old helper's restart does not end it here: it is killed in the middle of the handover,
  // its locks held (another app's request is refused HANDOVER).
  const old = launch({ STEWARD_SELF_RESTART_COMMAND: JSON.stringify(['/bin/true']) });
  await waitReady(h, old);
  const rel = await stewardRelease(h, '2.0.0', 'good');
  const up = await agentctl(h, ['update', 'steward', '2.0.0', '--file', rel.tgz, '--manifest', rel.manifest, '--json']);
  assert.equal(up.json?.accepted, true, up.stderr);
  const web = await agentctl(h, ['restart', 'web', '--json']);
  assert.match(web.stdout + web.stderr, /HANDOVER/);
  // What the agent relays for another app's rollout meanwhile: refused HANDOVER with no receipt,
  // so the agent's next try (after the restart) gets a real outcome for the same attemptId.
  const relayed = await callHelper(h.paths.helperSock, { v: 1, id: 1, op: 'rollback', app: 'web', attemptId: 'during-handover-1', noWait: true }).then(
    () => null,
    (e: unknown) => e as { code?: string },
  );
  assert.equal(relayed?.code, 'HANDOVER');
  old.kill('SIGKILL');
  await exited(old);
  const candidate = launch();
  await waitFor(async () => (await helperStatus(h.root))?.apps?.find((a: any) => a.name === 'steward')?.self?.decision === 'trial');
  candidate.kill('SIGKILL');
  await exited(candidate);
  const back = launch();
  await waitReady(h, back);
  await checkSettled(h, webPid, up.json.attemptId, { outcome: 'rolled-back', version: '1.0.0', code: 'REPLACEMENT_UNHEALTHY' });
  const webReceipts = await agentctl(h, ['receipts', 'web', '--json']);
  assert.ok(!webReceipts.stdout.includes('during-handover-1'), `no receipt for the attempt refused HANDOVER: ${webReceipts.stdout}`);
  await stopHelper(back);
});

async function waitFor(cond: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 50));
  }
}
