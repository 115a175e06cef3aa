import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SELF_APP_CONFIG } from '../../src/install/install-layout.js';
import { runIn as run, shIn as sh, writeIn } from '../helpers/container-exec.js';
import { bootSeveralForDpkg, runWebApp, statusOf, statusOnceUp, trialsOf, webRunning } from '../helpers/deb-container.js';
import { controlNodes, controlRuns } from '../helpers/control-read.js';
import { controlCli, startControlDaemon } from '../helpers/fleet.js';
import { stewardTarball } from '../helpers/self-release.js';
import { waitFor, type SystemdContainer } from '../helpers/systemd-container.js';

// A rollout of steward itself (docs/design.md §14 through §11) to three hosts, each a booted systemd
// container with the same .deb installed, enrolled to one steward-control. steward-control runs
// on this machine: the containers have no network of their own (systemd-nspawn without
// --private-network), so 127.0.0.1 is the same loopback inside and out. Each host trusts the
// steward release key and runs the app web. A good version goes to a canary, then to a batch of
// the other two, each run once on trial by its launcher and committed; a version whose helper
// exits at its start is run once by the canary, reverted, and halts the run before the batch.

const A = '50.0.0';
const B = '51.0.0';
// The package an apt upgrade brings after the self-update: newer than both releases.
const P = '52.0.0';
const HOSTS = 3;
const HEARTBEAT_S = 1;
// The candidate's self-probe, shorter than the package's 5 s; the agent's round trip well
// within the agent's backoff after the helper's restart.
const STEWARD = { ...SELF_APP_CONFIG, stableMs: 1000, agentTimeoutMs: 30_000 };

interface Host {
  box: SystemdContainer;
  nodeId: string;
  webPid: number;
}

// The host's own receipts of steward, decoded.
async function hostReceipts(box: SystemdContainer): Promise<any[]> {
  const r = await run(box, 'agentctl', ['--json', 'receipts', 'steward']);
  assert.equal(r.code, 0, r.text);
  return (r.json.receipts as any[]).map((x) => x.payload);
}

test('a rollout of steward through steward-control to three hosts: canary then batch commit; a version whose helper exits is reverted by the canary and halts the run', { timeout: 1_200_000 }, async (t) => {
  const t0 = Date.now();
  let mark = t0;
  const phase = (what: string) => {
    const now = Date.now();
    console.log(`phase ${what}: ${now - mark} ms`);
    mark = now;
  };
  const boxes = await bootSeveralForDpkg(t, HOSTS);
  if (!boxes) return;
  phase(`boot ${HOSTS} containers and build the .deb`);
  // The newer package, built while the rollouts run (awaited before its first use).
  const newerDeb = boxes[0]!.buildDeb(P);
  newerDeb.catch(() => {});
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'steward-fleet-self-'));
  t.after(() => rmSync(scratch, { recursive: true, force: true }));
  const db = path.join(scratch, 'control.db');
  const ctl = async (...args: string[]): Promise<any> => {
    const r = await controlCli(db, [...args, '--json']);
    assert.equal(r.code, 0, `steward-control ${args.join(' ')}: ${r.stdout}${r.stderr}`);
    return r.json;
  };

  // Each host's package, then the control plane and its releases (not at the same time: on a busy
  // machine, serve's start among three dpkg runs took over the 15 s startControlDaemon gives it).
  await Promise.all(boxes.map(async ({ box, deb, dpkg }) => {
    const install = await run(box, 'dpkg', dpkg('-i', deb), 180_000);
    assert.equal(install.code, 0, install.text);
    await statusOnceUp(box);
  }));
  phase(`install the .deb on ${HOSTS} hosts`);
  const controlPlane = (async () => {
    const control = await startControlDaemon(db, 0, HEARTBEAT_S);
    t.after(() => control.stop());
    const keys = await ctl('keys', 'create', '--out', path.join(scratch, 'keys'));
    const good = path.join(scratch, `steward-${A}.tgz`);
    await ctl('release', 'pack-steward', '--out', good, '--version', A);
    // B's helper exits with code 3 as soon as it starts.
    const bad = await stewardTarball(scratch, B, (tree) => {
      const entry = path.join(tree, 'bin/steward-helper.js');
      writeFileSync(entry, `process.exit(3);\n${readFileSync(entry, 'utf8')}`);
    });
    for (const [version, file] of [[A, good], [B, bad]] as const) await ctl('release', 'add', 'steward', version, '--file', file, '--base-url', control.url, '--key', keys.privateKeyFile);
    return { url: control.url, publicPem: readFileSync(keys.publicKeyFile, 'utf8') };
  })();
  const { url, publicPem } = await controlPlane;
  phase('steward-control with A and B in its catalog');

  const hosts: Host[] = await Promise.all(boxes.map(async ({ box }) => {
    await sh(box, 'mkdir -p /etc/steward/trusted-keys/steward');
    await writeIn(box, '/etc/steward/trusted-keys/steward/release.pub', publicPem);
    const webPid = await runWebApp(box, 'auto', { steward: STEWARD });
    const { token } = await ctl('token', 'create');
    const enroll = await run(box, 'agentctl', ['--json', 'enroll', '--control-plane', url, '--token', token]);
    assert.equal(enroll.code, 0, enroll.text);
    assert.equal((await run(box, 'systemctl', ['enable', '--now', 'steward-agent.service'])).code, 0);
    return { box, nodeId: enroll.json.nodeId as string, webPid };
  }));
  phase('web, the release key and enrollment on each host');
  const [canary, ...rest] = hosts as [Host, ...Host[]];

  // Every host heartbeating now with the app steward (at `version`, when given).
  const fleetReports = (version?: string) =>
    waitFor(`${HOSTS} nodes reporting steward ${version ?? ''}`, async () => {
      // The waits read the store in this process (control-read.ts), not through a CLI run a poll.
      const nodes = await controlNodes(db);
      const fresh = (nodes as any[]).filter((n) => n.apps?.some((a: any) => a.name === 'steward' && (version === undefined || a.current === version)) && Date.now() - n.lastHeartbeatAt < 2000 * HEARTBEAT_S);
      return fresh.length === HOSTS;
    }, 60_000, 1000);
  const rollout = async (version: string) => {
    await ctl('rollout', 'start', 'steward', version, '--canary', canary.nodeId, '--batch', String(HOSTS - 1), '--bake', '0', '--verdict-timeout', '90s');
    await waitFor(`the rollout of steward ${version} to end`, async () => {
      const [r] = await controlRuns(db, 'steward');
      return r?.version === version && r.status !== 'running';
    }, 150_000, 1000);
    // The run as the CLI prints it, once it ended.
    return (await ctl('rollout', 'status', 'steward')).runs[0];
  };
  const byNode = (run: any) => new Map<string, any>((run.nodes as any[]).map((n) => [n.nodeId, n]));
  const receiptsAt = async (attemptId: string) => ((await ctl('receipts', '--app', 'steward')).receipts as any[]).filter((r) => r.attemptId === attemptId);

  await fleetReports();
  phase('every node heartbeating');

  await t.test(`steward ${A} goes to the canary, commits there, then to a batch of the other two; the run succeeds`, async () => {
    const run = await rollout(A);
    phase(`rollout of ${A}`);
    assert.equal(run.status, 'succeeded', JSON.stringify(run));
    const nodes = byNode(run);
    const c = nodes.get(canary.nodeId);
    assert.deepEqual([c.batch, c.state, c.outcome], [0, 'confirmed', 'active'], JSON.stringify(c));
    // The canary's verdict reached steward-control before the batch was issued.
    const [verdict] = await receiptsAt(c.attemptId);
    assert.deepEqual([verdict?.outcome, verdict?.targetVersion], ['active', A], JSON.stringify(verdict));
    for (const h of rest) {
      const n = nodes.get(h.nodeId);
      assert.deepEqual([n.batch, n.state, n.outcome], [1, 'confirmed', 'active'], JSON.stringify(n));
      assert.ok(n.issuedAt >= verdict.receivedAt, `the batch was issued at ${n.issuedAt}, before the canary's verdict at ${verdict.receivedAt}`);
    }
    for (const h of hosts) {
      const s = await statusOf(h.box, 'steward');
      assert.deepEqual([s?.self?.version, s?.current], [A, A], JSON.stringify(s));
      assert.equal(await trialsOf(h.box, A), 1, 'the candidate ran once');
      assert.equal((await webRunning(h.box)).supervisor.pid, h.webPid, 'web is the same process');
    }
  });

  await t.test(`steward ${B}, whose helper exits at its start, runs once on the canary, is reverted, and halts the run before the batch`, async () => {
    await fleetReports(A);
    const run = await rollout(B);
    phase(`rollout of ${B}`);
    assert.equal(run.status, 'halted', JSON.stringify(run));
    assert.deepEqual([run.haltReason?.code, run.haltReason?.nodeId], ['REPLACEMENT_UNHEALTHY', canary.nodeId], JSON.stringify(run.haltReason));
    const nodes = byNode(run);
    const c = nodes.get(canary.nodeId);
    assert.deepEqual([c.batch, c.state, c.outcome], [0, 'reverted', 'rolled-back'], JSON.stringify(c));
    const [verdict] = await receiptsAt(c.attemptId);
    assert.deepEqual([verdict?.outcome, verdict?.reasonCode, verdict?.fromVersion], ['rolled-back', 'REPLACEMENT_UNHEALTHY', A], JSON.stringify(verdict));
    const s = await statusOf(canary.box, 'steward');
    assert.deepEqual([s?.self?.version, s?.current], [A, A], JSON.stringify(s));
    assert.ok(s.quarantined.includes(B), JSON.stringify(s));
    assert.equal(await trialsOf(canary.box, B), 1, 'the candidate ran once');
    for (const h of rest) {
      const n = nodes.get(h.nodeId);
      assert.deepEqual([n.batch, n.attemptId, n.outcome], [null, null, null], `never issued: ${JSON.stringify(n)}`);
      const st = await statusOf(h.box, 'steward');
      assert.deepEqual([st?.self?.version, st?.current], [A, A], JSON.stringify(st));
      assert.equal(await trialsOf(h.box, B), 0);
      assert.deepEqual((await hostReceipts(h.box)).filter((r) => r.targetVersion === B), []);
    }
    for (const h of hosts) assert.equal((await webRunning(h.box)).supervisor.pid, h.webPid, 'web is the same process');
  });

  // Issue 31 item 1: after a self-update, `apt install ./steward_<newer>.deb` restarted helper and
  // agent at once; the agent's start waited for the helper's readiness (After=), which the helper
  // on trial gave only after the agent's confirm, so the trial reverted at agentTimeoutMs and
  // dpkg failed, while the helper ran the old version and nothing said so.
  const [upgraded, reverting] = rest as [Host, Host];
  const helperJournal = async (box: SystemdContainer) => (await run(box, 'journalctl', ['-u', 'steward-helper.service', '--no-pager', '-o', 'cat'])).stdout;
  const dpkgStatus = async (box: SystemdContainer, dpkg: (...a: string[]) => string[]) => (await run(box, 'dpkg-query', dpkg('-W', '-f', '${Status} ${Version}', 'steward'))).stdout.trim();
  const agentExe = async (box: SystemdContainer) => {
    const pid = (await run(box, 'systemctl', ['show', '-p', 'MainPID', '--value', 'steward-agent.service'])).stdout.trim();
    return (await sh(box, `readlink /proc/${pid}/exe`)).stdout.trim();
  };
  const dpkgOf = (h: Host) => boxes.find((b) => b.box === h.box)!.dpkg;

  await t.test(`dpkg -i of a newer package (${P}) on a host that updated itself to ${A} commits its trial, its agent running, and dpkg says installed`, async () => {
    const deb = await newerDeb;
    const { box } = upgraded;
    assert.equal((await run(box, 'systemctl', ['is-active', 'steward-agent.service'])).stdout.trim(), 'active');
    const started = Date.now();
    const up = await run(box, 'dpkg', dpkgOf(upgraded)('-i', deb), 180_000);
    const took = Date.now() - started;
    phase(`dpkg -i ${P} after the self-update (${took} ms)`);
    assert.equal(up.code, 0, `${up.text}\n--- the helper's journal ---\n${(await helperJournal(box)).split('\n').slice(-40).join('\n')}`);
    // Within the trial's agentTimeoutMs (30 s here) by construction: a trial that waited longer reverted.
    assert.equal(await dpkgStatus(box, dpkgOf(upgraded)), `install ok installed ${P}`);
    const s = await statusOf(box, 'steward');
    assert.deepEqual([s?.self?.version, s?.current, s?.lastAttempt?.outcome, s?.self?.packageReverted ?? null], [P, P, 'active', null], JSON.stringify(s));
    assert.equal(await trialsOf(box, P), 1, 'the package ran once on trial');
    // The agent moved onto the new package's Node.js, and web is the same process.
    assert.equal(await agentExe(box), `/usr/lib/steward/${P}/node/bin/node`);
    assert.equal((await webRunning(box)).supervisor.pid, upgraded.webPid, 'web is the same process');
    // Issue 31 item 20: the helper's restarts (the rollout's handover, this upgrade) leave none of
    // its processes behind (the systemd-run clients of web's unit were).
    assert.doesNotMatch(await helperJournal(box), /left-over process|remains running after unit stopped/);
  });

  await t.test(`a package trial that does not commit (${P}, its agent stopped) fails dpkg's configure, and status, status --check, doctor and the heartbeat say it reverted; a reconfigure tries it again`, async () => {
    const deb = await newerDeb;
    const { box } = reverting;
    const dpkg = dpkgOf(reverting);
    // No agent, and a short wait for it: the trial cannot get its round trip.
    assert.equal((await run(box, 'systemctl', ['disable', '--now', 'steward-agent.service'])).code, 0);
    const config = JSON.parse((await run(box, 'cat', ['/etc/steward/steward.json'])).stdout);
    const withTimeout = async (agentTimeoutMs: number) => writeIn(box, '/etc/steward/steward.json', `${JSON.stringify({ ...config, apps: { ...config.apps, steward: { ...STEWARD, agentTimeoutMs } } }, null, 2)}\n`);
    await withTimeout(2000);
    const up = await run(box, 'dpkg', dpkg('-i', deb), 180_000);
    phase(`dpkg -i ${P} whose trial reverts`);
    assert.notEqual(up.code, 0, up.text);
    assert.match(up.text, new RegExp(`steward ${P.replace(/\./g, '\\.')}: this package's helper did not commit its trial and was reverted: .*steward ${A.replace(/\./g, '\\.')} runs`), up.text);
    assert.match(up.text, /dpkg --configure steward/);
    assert.equal(await dpkgStatus(box, dpkg), `install ok half-configured ${P}`);

    // `agentctl status` itself here (statusOf asks the helper's socket from this process).
    const st = await run(box, 'agentctl', ['--json', 'status', 'steward']);
    assert.equal(st.code, 0, st.text);
    const s = st.json.apps[0];
    assert.deepEqual([s?.self?.version, s?.current, s?.self?.packageReverted?.version], [A, A, P], JSON.stringify(s));
    assert.equal(s.supervisor?.state, 'running', 'the helper is the app steward, and it runs');
    const check = await run(box, 'agentctl', ['status', '--check']);
    assert.equal(check.code, 1, check.text);
    assert.match(check.text, new RegExp(`steward: REVERTED: the package's steward ${P.replace(/\./g, '\\.')} was tried and REVERTED`));
    const doctor = await run(box, 'agentctl', ['--json', 'doctor']);
    const verdict = (doctor.json?.checks as any[] | undefined)?.find((c) => c.name === 'steward version');
    assert.deepEqual([verdict?.status, /REVERTED/.test(verdict?.detail ?? '')], ['fail', true], doctor.text);
    // The receipt of the reverted attempt, and the heartbeat once the agent runs again.
    const receipt = (await hostReceipts(box)).find((r) => r.targetVersion === P);
    assert.deepEqual([receipt?.outcome, receipt?.reasonCode ?? receipt?.reason?.code], ['rolled-back', 'REPLACEMENT_UNHEALTHY'], JSON.stringify(receipt));
    assert.equal((await run(box, 'systemctl', ['enable', '--now', 'steward-agent.service'])).code, 0);
    await waitFor(`the control plane to hear that ${P} reverted on ${reverting.nodeId}`, async () => {
      const nodes = await controlNodes(db);
      const app = (nodes as any[]).find((n) => n.nodeId === reverting.nodeId)?.apps?.find((a: any) => a.name === 'steward');
      return app?.self?.packageReverted?.version === P && app.current === A && app.supervisor?.state === 'running';
    }, 30_000, 500);

    // The operator's retry, the agent running again: the configure step tries the package once more.
    await withTimeout(STEWARD.agentTimeoutMs);
    const again = await run(box, 'dpkg', dpkg('--configure', 'steward'), 180_000);
    phase(`dpkg --configure steward: ${P} tried again`);
    assert.equal(again.code, 0, again.text);
    assert.equal(await dpkgStatus(box, dpkg), `install ok installed ${P}`);
    const after = await statusOf(box, 'steward');
    assert.deepEqual([after?.self?.version, after?.current, after?.self?.packageReverted ?? null], [P, P, null], JSON.stringify(after));
    assert.equal(await trialsOf(box, P), 2, 'tried once by the upgrade, once by the reconfigure');
    assert.equal((await webRunning(box)).supervisor.pid, reverting.webPid, 'web is the same process');
  });
  console.log(`whole test: ${Date.now() - t0} ms`);
});
