import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AGENT_ENTRY, layOutAgentTree, packageVersion, packTree } from '../../../src/install/agent-release-pack.js';
import { bootOrSkip, CONTAINER_REPO, waitFor, type SystemdContainer } from '../../helpers/systemd-container.js';
import { CONTROL_BIN, serveControl } from '../../helpers/container-control.js';
import { preBundleCheckout, PRE_BUNDLE_COMMIT } from '../../fixtures/pre-bundle-agent-release.js';
import { reportScenarios, runIn, writeIn } from '../../helpers/container-exec.js';
import { makeReleaseKey, manifestFor, REPO, unitNodeFlags } from '../../helpers/host.js';

// The agent as the steward app `steward-agent` under a real systemd 252 (issue 6, item 3): install
// makes it a signed release with `current` pointing at it and its unit runs it from there; an
// update through `agentctl update` (the transaction with the `unit` runner) replaces the unit's
// main process with the new version and leaves a receipt; a broken agent release is rolled back
// by the helper; and a rollout from steward-control makes the agent update itself (it asks with
// noWait and the new agent process relays the receipt). The release the update installs is one of
// the agent as steward made it before its programs were bundled (a node_modules tree, the commit
// before the bundle: docs/design.md §15), and the rollout moves it forward to the bundled agent.

const AGENTCTL = `${CONTAINER_REPO}/bin/agentctl.js`;
const CONTROL = CONTROL_BIN;
const APP_DIR = '/opt/steward/apps/steward-agent';
// The agent's command line as its unit starts it (node flags from systemd/steward-agent.service).
const AGENT_CMDLINE = ['/usr/bin/node', ...unitNodeFlags('steward-agent.service'), `${APP_DIR}/current/bin/steward-agent.js`].join(' ');

const run = runIn;

// The agent unit's main process: its pid, the release folder it runs in and its command line.
async function agentProcess(box: SystemdContainer): Promise<{ pid: number; cwd: string; cmdline: string }> {
  const show = await run(box, 'systemctl', ['show', '-p', 'MainPID', '--value', 'steward-agent.service']);
  const pid = Number(show.stdout.trim());
  if (!pid) return { pid: 0, cwd: '', cmdline: '' };
  // The command line first: systemd's child sets WorkingDirectory= and then execs node, so once
  // the command line is node's the cwd read after it is final. Read the other way round, a read
  // between the fork and the exec paired the fork's '/' with node's command line.
  const cmdline = (await run(box, 'cat', [`/proc/${pid}/cmdline`])).stdout.split('\0').filter(Boolean).join(' ');
  const cwd = (await run(box, 'readlink', [`/proc/${pid}/cwd`])).stdout.trim();
  return { pid, cwd, cmdline };
}

test('the agent runs as the steward app steward-agent and is updated, rolled back and rolled out through steward', { timeout: 420_000 }, async (t) => {
  // Compiled while the container boots (tsc over that commit's src/: tens of seconds).
  const preBundle = preBundleCheckout();
  t.after(async () => (await preBundle.catch(() => null))?.cleanup());
  const box = await bootOrSkip(t);
  if (!box) return;
  const ran: string[] = [];
  const planned = 6;
  const work = mkdtempSync(path.join(os.tmpdir(), 'steward-agent-app-'));
  let stopServe: () => Promise<void> = async () => {};
  t.after(async () => {
    await reportScenarios(box, ran, planned, { units: ['steward-helper', 'steward-agent'], lines: 80 });
    await stopServe();
    await box.stop();
    rmSync(work, { recursive: true, force: true });
  });
  const v0 = packageVersion(REPO);
  const [major, minor, patch] = v0.split('.').map(Number) as [number, number, number];
  const next = (n: number) => `${major}.${minor}.${patch + n}`;
  // The operator's release key for steward-agent: its public half is given to install.
  const releaseKey = makeReleaseKey();
  writeFileSync(path.join(work, 'release.key'), releaseKey.privatePem, { mode: 0o600 });
  await writeIn(box, '/root/agent-release.pub', releaseKey.publicPem);
  await writeIn(box, '/root/agent-release.key', releaseKey.privatePem);

  // A signed agent release, packed from this checkout, or as the commit before the bundle packed
  // it (`preBundle`); `broken` makes an agent that exits at once.
  const release = async (version: string, opts: { broken?: boolean; preBundle?: boolean } = {}) => {
    const tree = path.join(work, `tree-${version}`);
    if (opts.preBundle) await (await preBundle).layOutAgentTree(tree, version);
    else await layOutAgentTree(REPO, tree, version);
    if (opts.broken) writeFileSync(path.join(tree, AGENT_ENTRY), 'process.exit(3);\n');
    const tgz = path.join(work, `steward-agent-${version}.tgz`);
    await packTree(tree, tgz);
    const bytes = readFileSync(tgz);
    const manifest = releaseKey.sign(manifestFor('steward-agent', version, bytes));
    await writeIn(box, `/root/steward-agent-${version}.tgz`, bytes);
    await writeIn(box, `/root/steward-agent-${version}.manifest`, JSON.stringify(manifest));
    return { tgz: `/root/steward-agent-${version}.tgz`, manifest: `/root/steward-agent-${version}.manifest` };
  };

  await t.test('install makes the agent a signed release with current pointing at it, and trusts the given key', async () => {
    const r = await run(box, '/usr/bin/node', [AGENTCTL, 'install', '--agent-key', '/root/agent-release.pub', '--json'], 180_000);
    assert.equal(r.code, 0, r.text);
    const by = Object.fromEntries(r.json.steps.map((s: any) => [s.step, s]));
    assert.equal(by['agent release'].action, 'created', by['agent release'].detail);
    assert.equal(by['agent key'].action, 'created', by['agent key'].detail);
    assert.equal((await run(box, 'readlink', [`${APP_DIR}/current`])).stdout.trim(), `versions/${v0}`);
    const marker = JSON.parse((await run(box, 'cat', [`${APP_DIR}/versions/${v0}/.steward-valid`])).stdout);
    assert.equal(marker.signed, true);
    assert.equal((await run(box, 'ls', ['/etc/steward/trusted-keys/steward-agent'])).stdout.trim(), `${releaseKey.keyId}.pub`, 'only the operator key is trusted, not the one-time install key');
    const cfg = JSON.parse((await run(box, 'cat', ['/etc/steward/steward.json'])).stdout);
    assert.deepEqual(cfg.apps['steward-agent'], { runner: 'unit', unit: 'steward-agent.service' });
    // Root-owned and read-only: nothing of the release is the steward user's or writable by others.
    const loose = await run(box, 'find', [APP_DIR, '!', '-type', 'l', '(', '-user', 'steward', '-o', '-perm', '/022', ')']);
    assert.equal(loose.stdout, '', `steward-owned or writable by others under ${APP_DIR}:\n${loose.stdout}`);
    const writable = await run(box, 'find', [`${APP_DIR}/versions/${v0}`, '!', '-type', 'l', '-perm', '/222']);
    assert.equal(writable.stdout, '', `writable in the release tree:\n${writable.stdout}`);
    const again = await run(box, '/usr/bin/node', [AGENTCTL, 'install', '--agent-key', '/root/agent-release.pub', '--json'], 180_000);
    assert.equal(again.code, 0, again.text);
    assert.equal(again.json.changed, false, JSON.stringify(again.json.steps, null, 2));
    ran.push('install: signed agent release, current, key, idempotent');
  });

  // Enrolled against steward-control on the container's loopback: the agent unit can start.
  const db = '/var/tmp/control.db';
  const served = await serveControl(box, db, 1);
  stopServe = served.stop;
  const url = served.url;
  const control = (args: string[]) => run(box, '/usr/bin/node', [CONTROL, ...args, '--db', db, '--json']);
  const cpReceipt = (version: string) =>
    waitFor(`the control plane to hold a receipt for steward-agent ${version}`, async () => {
      const r = await control(['receipts', '--app', 'steward-agent']);
      return r.json?.receipts?.find((x: any) => x.targetVersion === version && x.outcome !== 'refused') ?? r.json?.receipts?.find((x: any) => x.targetVersion === version);
    }, 60_000, 500);

  await t.test('the enrolled agent unit runs from current, i.e. from versions/<v>', async () => {
    const token = await control(['token', 'create']);
    assert.equal(token.code, 0, token.text);
    const enroll = await run(box, '/usr/bin/node', ['/opt/steward/lib/bin/agentctl.js', 'enroll', '--control-plane', url, '--token', token.json.token, '--json']);
    assert.equal(enroll.code, 0, enroll.text);
    const start = await run(box, 'systemctl', ['enable', '--now', 'steward-agent.service']);
    assert.equal(start.code, 0, start.text);
    // Until systemd's child has exec'd node, MainPID is set but runs no agent yet.
    const p = await waitFor('the agent main process', async () => {
      const a = await agentProcess(box);
      return a.cmdline.startsWith('/usr/bin/node') ? a : null;
    }, 30_000, 200);
    assert.equal(p.cwd, `${APP_DIR}/versions/${v0}`);
    assert.equal(p.cmdline, AGENT_CMDLINE);
    const node = await waitFor('a heartbeat with the agent version', async () => {
      const r = await control(['nodes']);
      const n = r.json?.nodes?.[0];
      return n?.agentVersion === v0 ? n : null;
    }, 30_000, 500);
    assert.equal(node.agentVersion, v0);
    ran.push(`agent runs from versions/${v0} (pid ${p.pid})`);
  });

  await t.test('agentctl update steward-agent replaces the unit main process with the new version, a release made before the bundle, and leaves a receipt', async () => {
    const before = await agentProcess(box);
    const v1 = next(1);
    const rel = await release(v1, { preBundle: true });
    const up = await run(box, '/usr/bin/node', [AGENTCTL, 'update', 'steward-agent', v1, '--file', rel.tgz, '--manifest', rel.manifest, '--json'], 120_000);
    assert.equal(up.code, 0, up.text);
    assert.equal(up.json.outcome, 'active', up.text);
    assert.equal(up.json.fromVersion, v0);
    const after = await agentProcess(box);
    assert.notEqual(after.pid, before.pid, 'a new main process');
    assert.equal(after.cwd, `${APP_DIR}/versions/${v1}`);
    assert.equal(after.cmdline, AGENT_CMDLINE);
    // The version the running agent reads from its own package.json: the new code runs.
    await waitFor(`a heartbeat from agent ${v1}`, async () => (await control(['nodes'])).json?.nodes?.[0]?.agentVersion === v1, 30_000, 500);
    const st = await run(box, '/usr/bin/node', [AGENTCTL, 'status', 'steward-agent', '--json']);
    assert.equal(st.json.apps[0].current, v1);
    assert.equal(st.json.apps[0].unit.mainPid, after.pid);
    const cp = await cpReceipt(v1);
    assert.equal(cp.outcome, 'active');
    assert.equal(cp.fromVersion, v0);
    // The release of the commit before the bundle: its launcher imports dist/src, its packages
    // are in node_modules.
    assert.equal((await run(box, 'test', ['-d', `${APP_DIR}/versions/${v1}/node_modules/commander`])).code, 0, 'a node_modules tree');
    assert.equal((await run(box, 'test', ['-e', `${APP_DIR}/versions/${v1}/dist/bundle`])).code, 1, 'no bundle');
    ran.push(`agentctl update ${v0} -> ${v1} (layout of ${PRE_BUNDLE_COMMIT}): pid ${before.pid} -> ${after.pid}, receipt seq ${cp.seq} at the control plane`);
  });

  await t.test('an agent release that exits at once is rolled back by the helper and the old agent runs again', async () => {
    const before = await agentProcess(box);
    const v1 = next(1);
    const bad = next(2);
    const rel = await release(bad, { broken: true });
    const up = await run(box, '/usr/bin/node', [AGENTCTL, 'update', 'steward-agent', bad, '--file', rel.tgz, '--manifest', rel.manifest, '--json'], 120_000);
    assert.equal(up.json?.outcome, 'rolled-back', up.text);
    assert.equal((await run(box, 'readlink', [`${APP_DIR}/current`])).stdout.trim(), `versions/${v1}`);
    const after = await waitFor('the old agent running again', async () => {
      const a = await agentProcess(box);
      return a.cmdline.startsWith('/usr/bin/node') ? a : null;
    }, 30_000, 200);
    assert.equal(after.cwd, `${APP_DIR}/versions/${v1}`);
    assert.equal((await run(box, 'systemctl', ['is-active', 'steward-agent'])).stdout.trim(), 'active');
    const cp = await cpReceipt(bad);
    assert.equal(cp.outcome, 'rolled-back');
    ran.push(`broken ${bad} rolled back to ${v1} (pid ${before.pid} -> ${after.pid}), receipt ${cp.reasonCode}`);
  });

  await t.test('a rollout from steward-control makes the agent made before the bundle update itself to the bundled one; the new agent heartbeats and relays the receipt', async () => {
    const before = await agentProcess(box);
    const v3 = next(3);
    // Packed by the operator's command this time (the other releases are packed by the test).
    const pack = await control(['release', 'pack-agent', '--out', `/root/steward-agent-${v3}.tgz`, '--version', v3]);
    assert.equal(pack.code, 0, pack.text);
    // agentctl update (admin.sock) held the app; the operator hands it back to the control plane.
    assert.equal((await run(box, '/usr/bin/node', [AGENTCTL, 'release-hold', 'steward-agent'])).code, 0);
    const add = await control(['release', 'add', 'steward-agent', v3, '--file', `/root/steward-agent-${v3}.tgz`, '--base-url', url, '--key', '/root/agent-release.key']);
    assert.equal(add.code, 0, add.text);
    const roll = await control(['rollout', 'start', 'steward-agent', v3, '--bake', '0']);
    assert.equal(roll.code, 0, roll.text);
    const cp = await cpReceipt(v3);
    assert.equal(cp.outcome, 'active', JSON.stringify(cp));
    assert.equal(cp.fromVersion, next(1), 'from the release made before the bundle');
    const after = await agentProcess(box);
    assert.notEqual(after.pid, before.pid);
    assert.equal(after.cwd, `${APP_DIR}/versions/${v3}`);
    assert.equal(after.cmdline, AGENT_CMDLINE, 'the unit runs both layouts with one command line');
    assert.equal((await run(box, 'test', ['-e', `${APP_DIR}/versions/${v3}/node_modules`])).code, 1, 'the bundled release has no node_modules');
    const node = await waitFor('a heartbeat from the new agent', async () => {
      const n = (await control(['nodes'])).json?.nodes?.[0];
      return n?.agentVersion === v3 ? n : null;
    }, 30_000, 500);
    assert.equal(node.agentVersion, v3);
    // Its probe was its confirm over helper.sock (docs/design.md §14), from the unit's main process.
    const helperLog = (await run(box, 'journalctl', ['-u', 'steward-helper', '--no-pager', '-o', 'cat'])).stdout;
    assert.match(helperLog, new RegExp(`confirm taken app=steward-agent version=${v3.replace(/\./g, '\\.')} attempt=\\S+ pid=${after.pid} `));
    ran.push(`rollout ${next(1)} (layout of ${PRE_BUNDLE_COMMIT}) -> ${v3} (bundled): agent stopped by its own request, pid ${before.pid} -> ${after.pid}, receipt relayed, confirmed by pid ${after.pid}`);
  });

  await t.test('uninstall --purge stops the agent and an app left in the helper cgroup, and leaves no release tree', async () => {
    // What a `detached`-runner app is to systemd: a process in the helper's cgroup that
    // KillMode=process leaves running when the helper stops.
    const cg = (await run(box, 'systemctl', ['show', '-p', 'ControlGroup', '--value', 'steward-helper.service'])).stdout.trim();
    // (cgroup v2, or the name=systemd hierarchy of a hybrid host such as this one may be.)
    const spawned = await run(box, '/bin/sh', ['-c', 'sleep 600 </dev/null >/dev/null 2>&1 & for m in /sys/fs/cgroup /sys/fs/cgroup/unified /sys/fs/cgroup/systemd; do [ -f "$m$1/cgroup.procs" ] && echo $! > "$m$1/cgroup.procs" && echo $! && exit 0; done; exit 1', 'sh', cg]);
    const pid = Number(spawned.stdout.trim());
    assert.ok(pid > 0, spawned.text);
    const r = await run(box, '/usr/bin/node', [AGENTCTL, 'uninstall', '--purge', '--json'], 120_000);
    assert.equal(r.code, 0, r.text);
    const step = r.json.steps.find((s: any) => s.step === 'stop detached apps');
    assert.equal(step?.action, 'ran', JSON.stringify(r.json.steps));
    assert.match(step.detail, new RegExp(`\\b${pid}\\b`));
    assert.notEqual((await run(box, 'kill', ['-0', String(pid)])).code, 0, `pid ${pid} still runs`);
    assert.notEqual((await run(box, 'systemctl', ['is-active', 'steward-agent'])).stdout.trim(), 'active');
    assert.equal((await run(box, 'test', ['-e', APP_DIR])).code, 1);
    ran.push(`uninstall --purge (stopped pid ${pid} left in the helper cgroup)`);
  });
});
