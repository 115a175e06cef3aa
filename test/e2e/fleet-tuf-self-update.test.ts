// steward updating itself through a real steward-control on TUF (docs/design.md §14, §21;
// docs/trust.md, "steward itself"), the operator's commands as docs/trust.md gives them, through
// the real CLI: the ceremony, `trust delegate steward`, `release pack-steward`, `release add
// steward ... --key s1 --key s2`, `trust export-root`. The host is the launcher's (real helpers
// under a root prefix, as test/e2e/self-update-trial.test.ts; each exit of the helper starts the
// launcher again, as systemd's Restart= would), enrolled with `--trust-root`, with no release key
// for steward, and a real agent process. A rollout of steward 2.0.0 reaches the helper through the
// agent with its directive, runs once on trial and commits, and the run succeeds on its receipt.
// steward 2.0.1, added while that trial ran (the helper RECOVERING, so the new metadata could not
// be verified then), rolls out right after it: the agent hands the bundle over again once the
// helper can verify it. Then a steward 2.1.0 written into the control plane's database, signed
// by a key its catalog allows but no delegation names, is rolled out: the host refuses it
// (TRUST_UNSIGNED), the run halts, and steward 2.0.1 runs on.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { addRelease } from '../../src/control/catalog/add-release.js';
import { artifactsDirOf } from '../../src/control/catalog/artifact-path.js';
import { openStore } from '../../src/control/store/open-store.js';
import { trustedKeysFor, versionDir } from '../../src/core/paths.js';
import { freePort } from '../fixtures/app-releases.js';
import { controlReceipts, controlRuns } from '../helpers/control-read.js';
import { controlCli, controlJson, startControlDaemon, waitUntil, type Daemon } from '../helpers/fleet.js';
import { helperStatus } from '../helpers/helper-status.js';
import { agentctl } from '../helpers/host.js';
import { startAgentProcess, type AgentProcess } from '../helpers/agent-process.js';
import { cleanedUpAfter, exited, makeSelfHost, startLauncher, waitReady, type SelfHost } from '../helpers/self-host.js';
import { controlAt, writeKeyPair, type Run } from '../helpers/trust-cli.js';
import { skipUnlessCI } from '../helpers/skip.js';

const IS_ROOT = process.getuid?.() === 0;
const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-fleet-tuf-self-'));
const db = path.join(dir, 'control.db');
const { children, hosts } = cleanedUpAfter();
let control: (Daemon & { url: string }) | null = null;
let agent: AgentProcess | null = null;
let unitStopped = false;

after(async () => {
  unitStopped = true;
  await agent?.stop();
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
  await Promise.all(children.map((c) => exited(c)));
  await control?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const ctl = (...args: string[]): Promise<any> => controlJson(db, args);

// The helper's unit: the launcher, started again 200 ms after each exit (Restart=always).
function unit(h: SelfHost): () => ChildProcess {
  let latest: ChildProcess;
  const start = () => {
    const c = startLauncher(h);
    children.push(c);
    latest = c;
    c.once('exit', () => {
      if (!unitStopped) setTimeout(start, 200);
    });
  };
  start();
  return () => latest;
}

async function runEnded(): Promise<any> {
  await waitUntil('the run to end', 90_000, async () => {
    const [run] = await controlRuns(db, 'steward');
    return run && run.status !== 'running' ? true : undefined;
  });
  return (await ctl('rollout', 'status', 'steward')).runs[0];
}

async function stewardOnHost(h: SelfHost): Promise<any> {
  return (await helperStatus(h.root))?.apps?.find((a: { name: string }) => a.name === 'steward');
}

test('steward delegated, packed and added by the operator under TUF rolls out to a tuf host, runs on trial and commits; a steward release no delegation signed is refused TRUST_UNSIGNED and halts the run', { timeout: 300_000 }, async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'needs root: the helper binds its sockets for group steward');
  const t0 = Date.now();
  const phase = (what: string) => console.log(`${what}: ${Date.now() - t0} ms`);
  const adminPort = await freePort();
  control = await startControlDaemon(db, 0, 1, { args: ['--admin-listen', `127.0.0.1:${adminPort}`] });
  const add = await controlCli(db, ['operator', 'add', 'ada', '--role', 'admin']);
  assert.equal(add.code, 0, add.stdout + add.stderr);
  const token = add.stdout.trim();
  const op = async (...args: string[]): Promise<Run> => {
    const r = await controlAt(`http://127.0.0.1:${adminPort}`, args, token);
    assert.equal(r.code, 0, `steward-control ${args.join(' ')}: ${r.stdout}${r.stderr}`);
    return r;
  };

  // 1. The repository (docs/trust.md steps 1 to 3), steward delegated to two keys (step 4).
  const [ra, rb, rc, s1, s2, evil] = ['root-alice', 'root-bob', 'root-carol', 'steward-sam', 'steward-sue', 'evil'].map((n) => writeKeyPair(dir, n));
  await op('trust', 'init', '--keys', `${ra!.pub},${rb!.pub},${rc!.pub}`, '--threshold', '2');
  await op('trust', 'sign-root', '--key', ra!.key);
  await op('trust', 'sign-root', '--key', rb!.key);
  await op('trust', 'sign-root', '--key', ra!.key);
  await op('trust', 'delegate', 'steward', '--keys', `${s1!.pub},${s2!.pub}`, '--threshold', '2');
  await op('trust', 'sign-root', '--key', ra!.key);
  await op('trust', 'sign-root', '--key', rb!.key);
  const s = (await op('trust', 'status', '--json')).json;
  assert.deepEqual(s.apps.map((x: { app: string; threshold: number }) => [x.app, x.threshold]), [['steward', 2]], JSON.stringify(s));
  // 2. steward 2.0.0 packed from this build and added under the delegation (step 5).
  const tgz = path.join(dir, 'steward-2.0.0.tgz');
  const packed = await op('release', 'pack-steward', '--out', tgz, '--version', '2.0.0', '--json');
  assert.equal(packed.json.app, 'steward');
  const added = await op('release', 'add', 'steward', '2.0.0', '--file', tgz, '--base-url', control.url, '--key', s1!.key, '--key', s2!.key, '--json');
  assert.equal(added.json.trust?.role, 'app.steward', added.stdout);
  const rootFile = path.join(dir, 'root.json');
  await op('trust', 'export-root', '--out', rootFile);
  phase('repository, pack-steward, release add');

  // 3. The host: steward's package 1.0.0 run by the launcher, no release key for steward.
  // stableMs: the trial long enough for a `release add` while it runs.
  const h = await makeSelfHost('1.0.0', { apps: { steward: { runner: 'self', stableMs: 5000 } } });
  hosts.push(h);
  rmSync(trustedKeysFor(h.paths, 'steward'), { recursive: true, force: true });
  const helperNow = unit(h);
  await waitReady(h, helperNow());
  const enrolled = await agentctl(h, ['enroll', '--control-plane', control.url, '--token', (await ctl('token', 'create')).token, '--trust-root', rootFile, '--json']);
  assert.equal(enrolled.code, 0, enrolled.stdout + enrolled.stderr);
  assert.deepEqual(enrolled.json.trust, { scheme: 'tuf', rootVersion: 1 });
  const nodeId: string = enrolled.json.nodeId;
  agent = startAgentProcess(h);
  await waitUntil('the node to heartbeat as tuf with steward', 60_000, async () => {
    const n = (await ctl('nodes')).nodes.find((x: { nodeId: string }) => x.nodeId === nodeId);
    return n?.trust?.scheme === 'tuf' && n.metadataStale === false && n.apps.some((a: { name: string }) => a.name === 'steward') ? n : undefined;
  });
  phase('host enrolled');

  // 4. The rollout: handed over, run once on trial by the next start, committed. While the trial
  // runs (RECOVERING until it commits), the operator adds 2.0.1: the agent is offered metadata
  // that no helper can verify then, and must hand it to the helper that committed before it
  // relays 2.0.1's update (not five minutes later, which refused that update TRUST_UNSIGNED).
  const tgz201 = path.join(dir, 'steward-2.0.1.tgz');
  await op('release', 'pack-steward', '--out', tgz201, '--version', '2.0.1');
  const firstPid = helperNow().pid;
  await ctl('rollout', 'start', 'steward', '2.0.0', '--bake', '0', '--batch', '100%');
  await waitUntil('the trial of 2.0.0', 30_000, async () => ((await stewardOnHost(h).catch(() => null))?.self?.decision === 'trial' ? true : undefined));
  await op('release', 'add', 'steward', '2.0.1', '--file', tgz201, '--base-url', control.url, '--key', s1!.key, '--key', s2!.key);
  await waitUntil('the agent to offer the trial the new metadata', 15_000, async () => (/trust refresh to root \d+ timestamp \d+[^\n]*code=RECOVERING/.test(agent!.stderr()) ? true : undefined));
  const run = await runEnded();
  assert.equal(run.status, 'succeeded', `${JSON.stringify(run, null, 2)}\n${agent.stderr().slice(-4000)}`);
  const st = await stewardOnHost(h);
  assert.deepEqual([st.self.version, st.current, st.highestActive], ['2.0.0', '2.0.0', '2.0.0'], JSON.stringify(st));
  assert.notEqual(helperNow().pid, firstPid, 'another helper runs');
  const good = (await controlReceipts(db, 'steward')).find((r) => r.targetVersion === '2.0.0');
  assert.equal(good?.outcome, 'active', JSON.stringify(good));
  phase('rollout of 2.0.0 succeeded');
  // The next trial needs no window: read by the helper that starts it.
  h.writeConfig({ apps: { steward: { runner: 'self', stableMs: 300 } } });
  await ctl('rollout', 'start', 'steward', '2.0.1', '--bake', '0', '--batch', '100%');
  const next = await runEnded();
  assert.equal(next.status, 'succeeded', `${JSON.stringify(next, null, 2)}\n${agent.stderr().slice(-4000)}`);
  assert.equal((await stewardOnHost(h)).self.version, '2.0.1');
  phase('rollout of 2.0.1, added during the trial, succeeded');

  // 5. The control plane compromised: a steward 2.1.0 signed by a key of its own, written into
  // its database, rolled out. The director directs it; no delegation signed it.
  await ctl('keys', 'allow', 'steward', '--key', evil!.pub);
  const evilTgz = path.join(dir, 'steward-2.1.0.tgz');
  await op('release', 'pack-steward', '--out', evilTgz, '--version', '2.1.0');
  const store = await openStore(db);
  try {
    await addRelease(store, { app: 'steward', version: '2.1.0', file: evilTgz, url: null, baseUrl: control.url, privateKeyPem: readFileSync(evil!.key, 'utf8'), expiresDays: 30, artifactsDir: artifactsDirOf(db) });
  } finally {
    await store.close();
  }
  const pid = helperNow().pid;
  await ctl('rollout', 'start', 'steward', '2.1.0', '--bake', '0', '--max-refused', '0');
  const refused = await runEnded();
  assert.equal(refused.status, 'halted', JSON.stringify(refused, null, 2));
  assert.deepEqual([refused.haltReason.code, refused.haltReason.nodeId], ['TRUST_UNSIGNED', nodeId], JSON.stringify(refused.haltReason));
  const receipt = (await controlReceipts(db, 'steward')).find((r) => r.targetVersion === '2.1.0');
  assert.deepEqual([receipt?.outcome, receipt?.reasonCode], ['refused', 'TRUST_UNSIGNED'], JSON.stringify(receipt));
  assert.match(receipt?.reasonMessage ?? '', /steward\/2\.1\.0\/manifest\.json is not a target the app\.steward delegation signs/);
  assert.equal(helperNow().pid, pid, 'the helper was not handed over');
  assert.equal(existsSync(path.join(h.paths.selfDir, 'candidate')), false);
  assert.equal(existsSync(versionDir(h.paths, 'steward', '2.1.0')), false, 'nothing of 2.1.0 was staged');
  const after = await stewardOnHost(h);
  assert.deepEqual([after.self.version, after.current], ['2.0.1', '2.0.1']);
  phase('2.1.0 refused');
});
