import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { DesiredEntry } from '../../src/core/control-api.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, makeReleaseKey, manifestFor, processApp, type ReleaseKey } from '../helpers/host.js';
import { allReceipts } from '../helpers/app-processes.js';
import { startAgentProcess, type AgentProcess } from '../helpers/agent-process.js';
import { FakeControlPlane } from '../helpers/fake-control-plane.js';
import { appRelease, fetchVersion, freePort, releaseArgs } from '../fixtures/app-releases.js';

const host = useHost(after, { apps: { web: processApp({ stopTimeoutMs: 1000 }) } });
let agent: AgentProcess | undefined;
let key: ReleaseKey;
let port: number;
let nodeId: string;
const cp = new FakeControlPlane();

before(async () => {
  port = await freePort();
  key = makeReleaseKey(host, ['web']);
  await host.startHelper();
  cp.heartbeatSeconds = 1;
  cp.tokens.add('converge-token-0123456789');
  await cp.listen();
  const r = await agentctl(host, ['enroll', '--control-plane', cp.url, '--token', 'converge-token-0123456789', '--json']);
  assert.equal(r.code, 0, r.stderr);
  nodeId = r.json.nodeId;
});

after(() => cp.stop());

// A desired entry whose signed manifest points at the fake control plane's artifact.
function desired(version: string, attemptId: string): DesiredEntry {
  const tgz = appRelease('web', version, port, { stableMs: 100 });
  cp.artifacts.set(`web/${version}.tgz`, tgz);
  const manifest = key.sign(manifestFor('web', version, tgz, { url: `${cp.url}/v1/artifacts/web/${version}.tgz` }));
  return { app: 'web', version, attemptId, manifest };
}

const acted = (): string[] => {
  try {
    return JSON.parse(readFileSync(path.join(host.paths.agentDir, 'acted.json'), 'utf8')).acted.map((e: { attemptId: string }) => e.attemptId);
  } catch {
    return [];
  }
};

const storedFor = (attemptId: string) => cp.storedReceipts().filter((r) => r.attemptId === attemptId);

// Waits for `n` more accepted heartbeats than now.
async function moreHeartbeats(a: AgentProcess, n: number): Promise<void> {
  const target = cp.heartbeats.filter((h) => h.status === 200).length + n;
  await a.waitFor(`${n} more heartbeats`, () => cp.heartbeats.filter((h) => h.status === 200).length >= target);
}

test('a desired entry is performed once under the control plane attemptId, and a restarted agent does not act on it again', { timeout: 120_000 }, async () => {
  const X = 'run-1.web.1';
  cp.desired = [desired('1.0.0', X)];
  agent = startAgentProcess(host);
  const a = agent;
  await a.waitFor('the receipt of the attempt', () => storedFor(X).length === 1, 60_000);
  const [receipt] = storedFor(X);
  assert.equal(receipt?.outcome, 'active');
  assert.equal(receipt?.nodeId, nodeId);
  assert.equal(receipt?.targetVersion, '1.0.0');
  assert.equal(await fetchVersion(port), '1.0.0');
  assert.deepEqual(acted(), [X]);
  assert.match(a.stderr(), new RegExp(`desired handed to the helper app=web version=1\\.0\\.0 attemptId=${X.replace(/\./g, '\\.')} answer=accepted`));

  assert.equal(await a.stop(), 0);
  agent = startAgentProcess(host);
  const b = agent;
  await moreHeartbeats(b, 3);
  assert.doesNotMatch(b.stderr(), /desired handed to the helper/, 'the restarted agent did not hand it over again');
  const { receipts } = await allReceipts(host, 'web');
  assert.equal(receipts.filter((r) => r.payload.attemptId === X).length, 1, 'the helper ran the attempt once');
});

test('a held app answers HELD with a signed refused receipt, and the agent does not retry it', { timeout: 120_000 }, async () => {
  // An operator's update over admin.sock puts a hold on the app.
  const op = await agentctl(host, ['update', 'web', '1.1.0', ...releaseArgs(host.scratch, 'web', '1.1.0', port, { stableMs: 100 }), '--json']);
  assert.equal(op.code, 0, op.stderr + op.stdout);
  const Y = 'run-2.web.1';
  cp.desired = [desired('1.2.0', Y)];
  const a = agent as AgentProcess;
  await a.waitFor('the refused receipt', () => storedFor(Y).length === 1, 60_000);
  const [refused] = storedFor(Y);
  assert.equal(refused?.outcome, 'refused');
  assert.equal(refused?.reason?.code, 'HELD');
  assert.ok(acted().includes(Y));
  await moreHeartbeats(a, 3);
  const { receipts } = await allReceipts(host, 'web');
  assert.equal(receipts.filter((r) => r.payload.attemptId === Y).length, 1, 'asked once, refused once');
  assert.equal((a.stderr().match(new RegExp(`attemptId=${Y.replace(/\./g, '\\.')} code=HELD`, 'g')) ?? []).length, 1);
  assert.equal(await fetchVersion(port), '1.1.0');
});

test("the host's own hold reaches the control plane with who, why and until when (heartbeat v6), and once it is lifted the next desired entry applies", { timeout: 120_000 }, async () => {
  const a = agent as AgentProcess;
  cp.heartbeatVersions = [1, 2, 3, 4, 5, 6];
  const put = await agentctl(host, ['hold', 'web', '--reason', 'change freeze', '--until', '2h', '--json']);
  assert.equal(put.code, 0, put.stderr + put.stdout);
  const reported = () => cp.heartbeats.filter((h) => h.status === 200 && h.payload.v === 6).map((h) => h.payload.apps.find((x) => x.name === 'web'));
  await a.waitFor('a heartbeat v6 with the hold', () => reported().some((w) => w?.hold?.reason === 'change freeze'), 30_000);
  const web = reported().find((w) => w?.hold?.reason === 'change freeze');
  assert.deepEqual(web?.hold, put.json.hold, 'by, reason, at and until as the helper has them');
  assert.equal(web?.held, true);

  const Z = 'run-3.web.1';
  cp.desired = [desired('1.2.0', Z)];
  await a.waitFor('the refused receipt', () => storedFor(Z).length === 1, 60_000);
  assert.equal(storedFor(Z)[0]?.reason?.code, 'HELD');

  const rel = await agentctl(host, ['release-hold', 'web', '--json']);
  assert.equal(rel.code, 0, rel.stderr);
  await a.waitFor('a heartbeat without the hold', () => reported().at(-1)?.held === false, 30_000);
  assert.equal(reported().at(-1)?.hold, undefined);
  const W = 'run-4.web.1';
  cp.desired = [desired('1.2.0', W)];
  await a.waitFor('the receipt of the new attempt', () => storedFor(W).length === 1, 60_000);
  assert.equal(storedFor(W)[0]?.outcome, 'active');
  assert.equal(await fetchVersion(port), '1.2.0');
});
