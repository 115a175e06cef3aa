// docs/design.md §18, wake-ups, from the agent's side: a real heartbeat loop with its wake-up waits,
// over the real client, against a real control plane on the real clock.
// - A run issuing to the node reaches it at once: the held heartbeat's answer brings the entry (its
//   log says woken), long before the 30 s interval, within 2 s.
// - Quiet, the node sends one request per interval, its held heartbeat, never a busy loop.
// - A control plane that holds no heartbeat and has no wait route (an older release): the agent
//   asks once for each and heartbeats as before.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { waitSeconds, MIN_WAIT_MS } from '../../src/agent/wake-wait.js';
import { addRelease } from '../../src/control/catalog/add-release.js';
import { createToken } from '../../src/control/enroll/tokens.js';
import { startRun } from '../../src/control/rollouts/start-run.js';
import { startControlServer, type ControlServer } from '../../src/control/server/control-server.js';
import { openSqliteStore, type SqliteStore } from '../../src/control/store/sqlite/open-sqlite-store.js';
import { systemClock } from '../../src/platform/clock.js';
import { generateKeyPair } from '../../src/platform/keys.js';
import { FakeNode } from '../helpers/control-harness.js';
import { FakeControlPlane } from '../helpers/fake-control-plane.js';
import { pause } from '../helpers/wait-client.js';
import { startWakeAgent } from '../helpers/wake-agent.js';

test('a wait lasts until the next heartbeat, at most 60 s; under 2 s left there is none', () => {
  const table: Array<[number, number | null]> = [[0, null], [MIN_WAIT_MS - 1, null], [MIN_WAIT_MS, 2], [2_999, 2], [30_000, 30], [59_999, 59], [60_000, 60], [300_000, 60]];
  for (const [left, want] of table) assert.equal(waitSeconds(left), want, `${left} ms left`);
});

let dir: string;
let store: SqliteStore;
let server: ControlServer;
const control = { clock: { now: () => Date.now() }, server: { url: '' }, token: async () => (await store.write((tx) => createToken(tx, 3_600_000, {}))).token };

async function serveWith(heartbeatSeconds: number): Promise<void> {
  await server?.close();
  await store.write((tx) => tx.settings.set('heartbeatSeconds', String(heartbeatSeconds)));
  server = await startControlServer({ store, artifactsDir: path.join(dir, 'artifacts'), host: '127.0.0.1', port: 0, heartbeatSeconds, clock: systemClock, tickMs: 0 });
  control.server.url = server.url;
}

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'steward-wake-ups-'));
  store = openSqliteStore(path.join(dir, 'control.db'), { create: true });
});
after(async () => {
  await server?.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

test('a run that issues to an online node reaches it within 2 s, by its wake-up, not its 30 s heartbeat', async () => {
  await serveWith(30);
  const node = await new FakeNode(control, 'host-wake').enroll();
  const key = generateKeyPair();
  const file = path.join(dir, 'web-1.1.0.tgz');
  writeFileSync(file, 'tarball');
  await addRelease(store, { app: 'web', version: '1.1.0', file, url: null, baseUrl: server.url, privateKeyPem: key.privatePem, expiresDays: 30, artifactsDir: path.join(dir, 'artifacts') });
  const agent = await startWakeAgent({ urls: [server.url], nodeId: node.nodeId, nodeKey: node.node.privateKey, helperKey: node.helper.publicKey, heartbeatSeconds: 30 });
  try {
    // Online: its first heartbeat answered at once (it had seen no desired set), its second held.
    for (let i = 0; i < 50 && agent.posts < 2; i++) await pause(100);
    await pause(300);
    assert.equal(agent.posts, 2);
    assert.equal(agent.gets, 0, 'no wait beside a held heartbeat');
    await pause(200);
    const t0 = Date.now();
    await startRun(store, 'web', '1.1.0', { canary: [node.nodeId], batch: '1', bakeMs: 0 });
    for (let i = 0; i < 100 && agent.desired.length === 0; i++) await pause(20);
    const took = (agent.desired[0]?.at ?? Infinity) - t0;
    assert.equal(agent.desired.length, 1, `the entry came; agent log:\n${agent.logs.join('\n')}`);
    assert.ok(agent.logs.some((l) => /woken by the control plane/.test(l) && /held/.test(l)), 'the held heartbeat brought it');
    assert.ok(agent.logs.some((l) => /seq=2 .*held=woken/.test(l)), agent.logs.join('\n'));
    assert.equal(agent.gets, 0);
    assert.ok(took < 2_000, `the change reached the node in ${took} ms`);
  } finally {
    await agent.stop();
  }
});

test('quiet, an online node sends about one request per interval: its held heartbeat', { timeout: 60_000 }, async () => {
  await serveWith(3);
  const node = await new FakeNode(control, 'host-quiet').enroll();
  const agent = await startWakeAgent({ urls: [server.url], nodeId: node.nodeId, nodeKey: node.node.privateKey, helperKey: node.helper.publicKey, heartbeatSeconds: 3 });
  const windowMs = 12_500;
  try {
    await pause(windowMs);
  } finally {
    await agent.stop();
  }
  // Holds of 3 s ± 10 %: after the first heartbeat (answered at once, `changed`), one held
  // heartbeat per interval, and nothing else.
  const intervals = windowMs / 3_000;
  assert.ok(agent.posts >= 4 && agent.posts <= Math.ceil(intervals) + 1, `${agent.posts} heartbeats in ${windowMs} ms`);
  assert.equal(agent.gets, 0);
  const gaps = agent.heartbeatTimes.slice(2).map((t, i) => t - agent.heartbeatTimes[i + 1]!);
  assert.ok(gaps.every((g) => g >= 2_500 && g <= 3_800), `gaps ${gaps.join(', ')} ms`);
  assert.ok(!agent.logs.some((l) => /woken|wait failed|refused/.test(l)), agent.logs.join('\n'));
});

test('against a control plane that holds no heartbeat and has no wait route (404) the agent asks once and keeps its plain heartbeats', { timeout: 60_000 }, async () => {
  const cp = new FakeControlPlane();
  cp.heartbeatSeconds = 3;
  const node = new FakeNode(control, 'host-old');
  cp.addNode('n-00aa', node.node.publicKey, node.helper.publicKey);
  const url = await cp.listen();
  const agent = await startWakeAgent({ urls: [url], nodeId: 'n-00aa', nodeKey: node.node.privateKey, helperKey: node.helper.publicKey, heartbeatSeconds: 3 });
  try {
    await pause(8_000);
  } finally {
    await agent.stop();
    await cp.stop();
  }
  assert.equal(agent.gets, 1, 'one wait, answered 404; none after it');
  assert.ok(agent.logs.some((l) => /has no \/v1\/wait/.test(l)));
  assert.equal(agent.logs.filter((l) => /holds no heartbeat/.test(l)).length, 1, 'the hold asked for once');
  assert.ok(cp.heartbeats.length >= 3 && cp.heartbeats.every((h) => h.status === 200), `${cp.heartbeats.length} heartbeats, all answered`);
  // Plain intervals: 3 s ± 10 % apart.
  const gaps = agent.heartbeatTimes.slice(1).map((t, i) => t - agent.heartbeatTimes[i]!);
  assert.ok(gaps.every((g) => g >= 2_600 && g <= 3_800), `gaps ${gaps.join(', ')} ms`);
});
