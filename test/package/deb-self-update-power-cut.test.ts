import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathIn, runIn as run, shIn as sh, writeIn } from '../helpers/container-exec.js';
import { bootForDpkg, mainPid, nextPatch, runWebApp, statusOf, statusOnceUp, stewardReceiptMatching, trialsOf, webRunning } from '../helpers/deb-container.js';
import { makeReleaseKey } from '../helpers/host.js';
import { stewardReleaseFiles } from '../helpers/self-release.js';
import { waitFor, type SystemdContainer } from '../helpers/systemd-container.js';

// Self-update under a real systemd (docs/design.md §14), one container with the .deb installed: power cuts
// at each of the trial's renames, a SIGKILL of the old helper during its handover, and apt
// upgrades to a package newer and older than the committed release. A power cut is steward's
// every process (the helper's unit, the agent's, each app's) SIGKILLed at once while the process
// that made the rename is stopped right after it; systemd then starts the helper's unit again as
// a boot would (a volatile container keeps /var in its memory, so the machine itself is not cut).
// The stop is strace's: the unit's ExecStart is wrapped in a drop-in of this test only (or strace
// attaches to the running helper), and SIGSTOP is injected at the first rename, unlink or folder
// fsync naming the file, taken as that call returns. After each case: the candidate ran at most once, one
// version is `current`, a receipt tells what happened, and web runs, unblocked.

const UNIT = 'steward-helper.service';
const SELF = '/var/lib/steward/self';
const CURRENT = '/opt/steward/apps/steward/current';
const DROP_IN = `/etc/systemd/system/${UNIT}.d/zz-stop.conf`;
// In the unit's ReadWritePaths: strace runs in its sandbox.
const TRACE = '/var/log/steward/test-stop.strace';
const RENAMES = 'rename,renameat,renameat2';
// A helper renames with rename(2), whose new name strace's -P does not match: its stop is at
// the folder's fsync that follows the rename (nothing comes between them).
const FSYNCS = 'fsync,fdatasync';

interface Stop {
  calls: string;
  file: string;
  what: string;
}
const AFTER: Record<'candidate' | 'trying' | 'current' | 'untrying' | 'reverted', Stop> = {
  candidate: { calls: FSYNCS, file: SELF, what: 'the old helper renamed its new file to candidate' },
  trying: { calls: RENAMES, file: `${SELF}/trying`, what: 'the launcher renamed candidate to trying' },
  current: { calls: FSYNCS, file: path.dirname(CURRENT), what: "the candidate's commit swapped current" },
  untrying: { calls: 'unlink,unlinkat', file: `${SELF}/trying`, what: "the candidate's commit removed trying" },
  reverted: { calls: RENAMES, file: `${SELF}/reverted`, what: 'the launcher renamed trying to reverted' },
};
const straceArgs = (s: Stop) => ['-f', '-qq', '-o', TRACE, '-e', `trace=${s.calls}`, '-P', s.file, '-e', `inject=${s.calls}:signal=SIGSTOP:when=1`];

// The unit's next starts run under strace with `stop` (none: as the package has it). -D keeps
// the launcher, then the helper it execs, the unit's main process, strace being its grandchild.
async function armStart(box: SystemdContainer, stop: Stop | null): Promise<void> {
  if (stop) {
    const exec = (await sh(box, `systemctl cat ${UNIT} | sed -n 's/^ExecStart=\\(..*\\)$/\\1/p' | head -n 1`)).stdout.trim();
    await writeIn(box, DROP_IN, `[Service]\nExecStart=\nExecStart=/usr/bin/strace -D ${straceArgs(stop).join(' ')} ${exec}\n`);
  } else {
    await sh(box, `rm -f ${DROP_IN}`);
  }
  await sh(box, `rm -f ${TRACE} && systemctl daemon-reload`);
}

// Stops the running helper right after it next writes `candidate` (strace attached to it from
// outside the unit).
async function armRunning(box: SystemdContainer): Promise<void> {
  const pid = await mainPid(box, UNIT);
  await sh(box, `rm -f ${TRACE}`);
  const tracer = box.spawn('/usr/bin/strace', [...straceArgs(AFTER.candidate), '-p', pid], { stdio: 'ignore' });
  tracer.unref();
  // Read from this side through the container's root (its /proc): no process started per poll.
  await waitFor(`strace attached to the helper ${pid}`, async () => /^TracerPid:\s+[1-9]/m.test(readFileSync(pathIn(box, `/proc/${pid}/status`), 'utf8')), 10_000, 100);
}

// Waits for the stop; then, as at every start, `version` ran on trial at most once and `current`
// is one version.
async function stoppedAfter(box: SystemdContainer, stop: Stop, version: string): Promise<void> {
  const trace = pathIn(box, TRACE);
  await waitFor(`the stop right after ${stop.what}`, async () => existsSync(trace) && readFileSync(trace, 'utf8').includes('stopped by SIGSTOP'), 120_000, 200).catch(async (err: Error) => {
    const j = await run(box, 'journalctl', ['-u', UNIT, '--no-pager', '-o', 'cat', '-n', '30']);
    const tr = await run(box, 'cat', [TRACE]);
    throw new Error(`${err.message}\n--- strace ---\n${tr.text}\n--- journal ---\n${j.text}`);
  });
  assert.ok((await trialsOf(box, version)) <= 1, `steward ${version} ran on trial at most once`);
  assert.match((await sh(box, `readlink ${CURRENT}`)).stdout, /^versions\/[0-9][^/]*\n$/);
}

// The power cut: every process of steward's units SIGKILLed in one kill(1), the next start armed
// with `next` before. systemd's Restart= starts the helper's unit again (its start limit reset:
// a boot has none of the starts before it).
async function powerCut(box: SystemdContainer, next: Stop | null): Promise<void> {
  await armStart(box, next);
  await sh(box, `systemctl reset-failed ${UNIT}; kill -KILL $(cat $(find /sys/fs/cgroup -path '*/steward*.service/cgroup.procs')) 2>/dev/null; true`);
}

// The last receipt of the app steward about `version`, once there is one.
async function receiptFor(box: SystemdContainer, version: string, timeoutMs = 120_000): Promise<any> {
  return stewardReceiptMatching(box, `a receipt about steward ${version}`, (p) => p.targetVersion === version, timeoutMs).catch(async (err: Error) => {
    const j = await run(box, 'journalctl', ['-u', UNIT, '--no-pager', '-o', 'cat', '-n', '40']);
    throw new Error(`${err.message}\n--- journal ---\n${j.text}`);
  });
}

interface Settled {
  // The version offered, its receipt's outcome and reason, how many times it ran on trial.
  version: string;
  outcome: string;
  code?: string;
  trials: number;
  // The version that runs and is `current` after.
  current: string;
  // web's pid when it must be the same process (the cases without a power cut).
  webPid?: number;
}

// What every case ends in: the receipt, one `current` that runs, no trial file left, the
// candidate run at most once, the helper's unit active, and web running unblocked.
async function assertSettled(box: SystemdContainer, x: Settled): Promise<void> {
  const receipt = await receiptFor(box, x.version);
  assert.deepEqual([receipt.outcome, receipt.reason?.code], [x.outcome, x.code], JSON.stringify(receipt));
  const s = await waitFor('the status of steward', () => statusOf(box, 'steward'), 30_000, 500);
  assert.deepEqual([s.self.version, s.current], [x.current, x.current]);
  assert.equal((await sh(box, `readlink ${CURRENT}`)).stdout.trim(), `versions/${x.current}`);
  await sh(box, `test ! -e ${SELF}/trying && test ! -e ${SELF}/candidate && test ! -e ${SELF}/reverted`);
  assert.equal(await trialsOf(box, x.version), x.trials, `steward ${x.version} ran on trial ${x.trials} times`);
  assert.equal((await run(box, 'systemctl', ['is-active', UNIT])).stdout.trim(), 'active');
  const web = await webRunning(box);
  if (x.webPid !== undefined) assert.equal(web.supervisor.pid, x.webPid, 'web is the same process');
  assert.equal(web.current, '1.0.0');
  assert.equal((await statusOf(box, 'web')).blocked, null);
  assert.equal(await mainPid(box, 'steward-app-web.service'), String(web.supervisor.pid));
}

test('a self-update under systemd survives a power cut at each of its renames, a SIGKILL of the old helper during the handover, and apt upgrades older and newer than its release', { timeout: 600_000 }, async (t) => {
  const c = await bootForDpkg(t);
  if (!c) return;
  const { box, deb, version: pkg, dpkg } = c;
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'steward-self-cut-'));
  t.after(() => rmSync(scratch, { recursive: true, force: true }));
  // A release above the installed package (its version is the floor of steward's updates,
  // docs/self-update.md) and below the two packages this test builds.
  const firstRelease = nextPatch(pkg);
  const [olderPkg, newerPkg] = [nextPatch(firstRelease), nextPatch(nextPatch(firstRelease))];
  // One at a time: two builds share the package's staging folders.
  const debs = (async (): Promise<[string, string]> => [await c.buildDeb(olderPkg), await c.buildDeb(newerPkg)])();
  const install = await run(box, 'dpkg', dpkg('-i', deb), 180_000);
  assert.equal(install.code, 0, install.text);
  await statusOnceUp(box);
  let webPid = await runWebApp(box);
  const key = makeReleaseKey();
  await sh(box, `mkdir -p /etc/steward/trusted-keys/steward /etc/systemd/system/${UNIT}.d`);
  await writeIn(box, `/etc/steward/trusted-keys/steward/${key.keyId}.pub`, key.publicPem);
  const [olderDeb, newerDeb] = await debs;

  // Offers release `version` of steward; the answer is awaited by the caller, if at all (a helper
  // stopped right after writing `candidate` answers nothing until it is killed).
  const offer = async (version: string) => {
    const rel = await stewardReleaseFiles(scratch, key, version);
    await writeIn(box, `/tmp/steward-${version}.tgz`, readFileSync(rel.tgz));
    await writeIn(box, `/tmp/steward-${version}.json`, readFileSync(rel.manifest));
    return run(box, 'agentctl', ['--json', 'update', 'steward', version, '--file', `/tmp/steward-${version}.tgz`, '--manifest', `/tmp/steward-${version}.json`], 120_000);
  };
  const timed = async (name: string, body: () => Promise<void>) => {
    const t0 = performance.now();
    await t.test(name, body);
    console.log(`case took ${((performance.now() - t0) / 1000).toFixed(1)} s: ${name}`);
  };

  await timed(`apt upgrades to a package newer than the committed release: the package goes through the trial and commits`, async () => {
    // A release older than the packages this test builds, committed by its trial.
    const old = firstRelease;
    assert.equal((await offer(old)).json?.accepted, true);
    await assertSettled(box, { version: old, outcome: 'active', trials: 1, current: old, webPid });
    const up = await run(box, 'dpkg', dpkg('-i', olderDeb), 180_000);
    assert.equal(up.code, 0, up.text);
    await assertSettled(box, { version: olderPkg, outcome: 'active', trials: 1, current: olderPkg, webPid });
  });

  await timed('power cuts right after the old helper wrote candidate, after the commit swapped current, and after the next start renamed trying to reverted: it commits once', async () => {
    const v = '50.0.0';
    await armRunning(box);
    const answer = offer(v);
    await stoppedAfter(box, AFTER.candidate, v);
    await powerCut(box, AFTER.current);
    await answer;
    await stoppedAfter(box, AFTER.current, v);
    await powerCut(box, AFTER.reverted);
    await stoppedAfter(box, AFTER.reverted, v);
    await powerCut(box, null);
    webPid = (await webRunning(box)).supervisor.pid;
    await assertSettled(box, { version: v, outcome: 'active', trials: 1, current: v });
  });

  await timed('power cuts right after the launcher renamed candidate to trying and after the next start renamed trying to reverted: it never runs and is rolled back', async () => {
    const v = '51.0.0';
    await armStart(box, AFTER.trying);
    assert.equal((await offer(v)).json?.accepted, true);
    await stoppedAfter(box, AFTER.trying, v);
    await powerCut(box, AFTER.reverted);
    await stoppedAfter(box, AFTER.reverted, v);
    await powerCut(box, null);
    webPid = (await webRunning(box)).supervisor.pid;
    await assertSettled(box, { version: v, outcome: 'rolled-back', code: 'REPLACEMENT_UNHEALTHY', trials: 0, current: '50.0.0' });
  });

  await timed("a power cut right after the candidate's commit removed trying: it commits once", async () => {
    const v = '52.0.0';
    await armStart(box, AFTER.untrying);
    assert.equal((await offer(v)).json?.accepted, true);
    await stoppedAfter(box, AFTER.untrying, v);
    await powerCut(box, null);
    webPid = (await webRunning(box)).supervisor.pid;
    await assertSettled(box, { version: v, outcome: 'active', trials: 1, current: v });
  });

  await timed('a SIGKILL of the old helper right after it wrote candidate: the unit restarts, the candidate runs once and commits, web untouched', async () => {
    const v = '53.0.0';
    await armRunning(box);
    const answer = offer(v);
    await stoppedAfter(box, AFTER.candidate, v);
    await sh(box, `kill -KILL ${await mainPid(box, UNIT)}`);
    await answer;
    await assertSettled(box, { version: v, outcome: 'active', trials: 1, current: v, webPid });
  });

  await timed('apt upgrades to a package older than the committed release: the release keeps running, no trial', async () => {
    const helperPid = await mainPid(box, UNIT);
    const up = await run(box, 'dpkg', dpkg('-i', newerDeb), 180_000);
    assert.equal(up.code, 0, up.text);
    await statusOnceUp(box);
    assert.notEqual(await mainPid(box, UNIT), helperPid, 'the upgrade restarted the helper');
    await assertSettled(box, { version: '53.0.0', outcome: 'active', trials: 1, current: '53.0.0', webPid });
    assert.equal(await trialsOf(box, newerPkg), 0);
    const j = await run(box, 'journalctl', ['-u', UNIT, '--no-pager', '-o', 'cat']);
    assert.match(j.stdout.split('\n').filter((l) => l.startsWith('steward-launcher: running')).pop() ?? '', /^steward-launcher: running steward 53\.0\.0 \(current\)/);
    const r = await run(box, 'agentctl', ['--json', 'receipts', 'steward']);
    assert.ok(!JSON.stringify(r.json).includes(`"targetVersion":"${newerPkg}"`), 'no receipt about the package');
  });
});
