// docs/design.md §16 across versions: the previous release's hosts (helper, agent, agentctl) against this
// steward-control, and this release's hosts against the previous steward-control. In both, a
// rollout confirms, a failed start rolls back and its receipt reaches the control plane and counts
// (it halts the run): this release's hosts sign v1 receipts to a control plane that never said it
// takes v2, and this control plane takes the v1 receipts and answers the old agents in the shape
// they read.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { agentctl, makeHost, processApp, REPO, startHelper, type TestHost } from '../helpers/host.js';
import { killApps } from '../helpers/app-processes.js';
import { startAgentProcess } from '../helpers/agent-process.js';
import { startControlDaemon } from '../helpers/fleet.js';
import { appRelease, freePort } from '../fixtures/app-releases.js';
import { buildPreviousRelease, previousReleaseMissing, PREVIOUS_RELEASE, type Build } from './previous-release.js';

const CURRENT: Build['bin'] = {
  helper: path.join(REPO, 'bin/steward-helper.js'),
  agent: path.join(REPO, 'bin/steward-agent.js'),
  agentctl: path.join(REPO, 'bin/agentctl.js'),
  control: path.join(REPO, 'bin/steward-control.js'),
};

const missing = previousReleaseMissing();
let previous: (Build & { remove(): void }) | null = null;
before(async () => {
  if (missing) console.log(`# skipped: ${missing}`);
  else previous = await buildPreviousRelease();
});
after(() => previous?.remove());

async function fleetOf(hostBin: Build['bin'], controlBin: string): Promise<{ receipts: Array<{ outcome: string; counts: boolean; envelope: { payload: string } }>; runs: string[] }> {
  const port = await freePort();
  const host: TestHost = makeHost({ apps: { web: processApp({ stopTimeoutMs: 1000 }) } });
  const stops: Array<() => unknown> = [];
  try {
    const db = path.join(host.scratch, 'control.db');
    const ctl = (...args: string[]) => JSON.parse(execFileSync(process.execPath, [controlBin, ...args, '--db', db, '--json'], { encoding: 'utf8' }));
    const keys = ctl('keys', 'create', '--out', path.join(host.scratch, 'keys'));
    mkdirSync(path.join(host.paths.trustedKeysDir, 'web'), { recursive: true });
    copyFileSync(keys.publicKeyFile, path.join(host.paths.trustedKeysDir, 'web', 'release.pub'));
    const helper = await startHelper(host, {}, { bin: hostBin.helper });
    stops.push(() => helper.stop());
    const serve = await startControlDaemon(db, 0, 1, { bin: controlBin });
    stops.push(() => serve.kill());
    const { url } = serve;
    const enrolled = await agentctl(host, ['enroll', '--control-plane', url, '--token', ctl('token', 'create').token, '--json'], {}, hostBin.agentctl);
    assert.equal(enrolled.code, 0, enrolled.stderr + enrolled.stdout);
    const agent = startAgentProcess(host, [], hostBin.agent);
    stops.push(() => agent.stop());
    for (const v of ['1.0.0', '2.0.0']) {
      const file = path.join(host.scratch, `web-${v}.tgz`);
      writeFileSync(file, appRelease('web', v, port, v === '1.0.0' ? { stableMs: 100 } : { say: 'Error: boom\n', crash: 1 }));
      ctl('release', 'add', 'web', v, '--file', file, '--base-url', url, '--key', keys.privateKeyFile);
    }
    await agent.waitFor('the first heartbeat', () => Boolean(ctl('nodes').nodes[0]?.lastHeartbeatAt));
    const runs: string[] = [];
    for (const v of ['1.0.0', '2.0.0']) {
      ctl('rollout', 'start', 'web', v, '--bake', '0');
      await agent.waitFor(`the rollout of ${v} to end`, () => ctl('rollout', 'status', 'web').runs[0].status !== 'running', 90_000);
      runs.push(ctl('rollout', 'status', 'web').runs[0].status);
    }
    return { receipts: ctl('receipts').receipts, runs };
  } finally {
    for (const stop of stops.reverse()) await stop();
    killApps(host, ['web']);
    host.cleanup();
  }
}

const versionOf = (r: { envelope: { payload: string } }) => JSON.parse(Buffer.from(r.envelope.payload, 'base64').toString('utf8')).v;

test(`the previous release's hosts (${PREVIOUS_RELEASE.slice(0, 8)}) against this steward-control: rollouts confirm, a rollback's receipt counts`, { timeout: 400_000 }, async (t) => {
  if (!previous) return t.skip(missing ?? 'no previous release');
  const { receipts, runs } = await fleetOf(previous.bin, CURRENT.control);
  assert.deepEqual(runs, ['succeeded', 'halted']);
  assert.deepEqual(receipts.map((r) => [r.outcome, r.counts, versionOf(r)]), [['active', true, 1], ['rolled-back', true, 1]]);
});

test(`this release's hosts against the previous steward-control (${PREVIOUS_RELEASE.slice(0, 8)}): receipts stay v1, and a rollback's counts`, { timeout: 400_000 }, async (t) => {
  if (!previous) return t.skip(missing ?? 'no previous release');
  const { receipts, runs } = await fleetOf(CURRENT, previous.bin.control);
  assert.deepEqual(runs, ['succeeded', 'halted']);
  assert.deepEqual(receipts.map((r) => [r.outcome, r.counts, versionOf(r)]), [['active', true, 1], ['rolled-back', true, 1]]);
});

test(`this release's agent with the previous release's helper (${PREVIOUS_RELEASE.slice(0, 8)}): the helper refuses indexedManifest as malformed, the agent asks again without it, and the rollouts go on from the tarball`, { timeout: 400_000 }, async (t) => {
  if (!previous) return t.skip(missing ?? 'no previous release');
  // docs/design.md §20.2: this steward-control signs the indexed manifest of every release and sends
  // it to this agent, which names it in its desired-fields header.
  const { receipts, runs } = await fleetOf({ ...CURRENT, helper: previous.bin.helper, agentctl: previous.bin.agentctl }, CURRENT.control);
  assert.deepEqual(runs, ['succeeded', 'halted']);
  assert.deepEqual(receipts.map((r) => [r.outcome, r.counts]), [['active', true], ['rolled-back', true]]);
});

test(`a node this release enrolls with a list of control planes runs the previous release's agent (${PREVIOUS_RELEASE.slice(0, 8)}), which heartbeats to the URL that answered`, { timeout: 120_000 }, async (t) => {
  if (!previous) return t.skip(missing ?? 'no previous release');
  const host: TestHost = makeHost({ apps: { web: processApp() } });
  const db = path.join(host.scratch, 'control.db');
  const serve = await startControlDaemon(db, 0, 1);
  try {
    const ctl = (...args: string[]) => JSON.parse(execFileSync(process.execPath, [CURRENT.control, ...args, '--db', db, '--json'], { encoding: 'utf8' }));
    const dead = `http://127.0.0.1:${await freePort()}`;
    const enrolled = await agentctl(host, ['enroll', '--control-plane', dead, '--control-plane', serve.url, '--token', ctl('token', 'create').token, '--json']);
    assert.equal(enrolled.code, 0, enrolled.stderr + enrolled.stdout);
    // An agent rolled back to the previous release reads enrollment.json only, with its one URL.
    const agent = startAgentProcess(host, [], previous.bin.agent);
    try {
      await agent.waitFor('a heartbeat from the previous agent', () => Boolean(ctl('nodes').nodes[0]?.lastHeartbeatAt));
    } finally {
      assert.equal(await agent.stop(), 0, agent.stderr());
    }
  } finally {
    await serve.kill();
    host.cleanup();
  }
});
