// docs/design.md §18, wake-ups, with several instances on one PostgreSQL database: a change made by
// one instance reaches the wait another holds (LISTEN/NOTIFY), and killing the instance that holds
// an agent's wait moves the agent to another URL of its list, where the change still reaches it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { addRelease } from '../../src/control/catalog/add-release.js';
import { createToken } from '../../src/control/enroll/tokens.js';
import { startRun } from '../../src/control/rollouts/start-run.js';
import { startControlServer } from '../../src/control/server/control-server.js';
import { openStore } from '../../src/control/store/open-store.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { systemClock } from '../../src/platform/clock.js';
import { generateKeyPair } from '../../src/platform/keys.js';
import { FakeNode } from '../helpers/control-harness.js';
import { startControlDaemon, waitUntil } from '../helpers/fleet.js';
import { describePostgres } from '../helpers/store-backends.js';
import { pause, sendWait, waitAuth } from '../helpers/wait-client.js';
import { startWakeAgent } from '../helpers/wake-agent.js';

async function addWeb(store: ControlStore, dir: string, baseUrl: string): Promise<void> {
  const file = path.join(dir, 'web-1.1.0.tgz');
  writeFileSync(file, 'tarball of web 1.1.0');
  const key = generateKeyPair();
  await addRelease(store, { app: 'web', version: '1.1.0', file, url: null, baseUrl, privateKeyPem: key.privatePem, expiresDays: 30, artifactsDir: path.join(dir, 'artifacts') });
}

describePostgres((backend) => {
  test("the wait instance B holds is answered when instance A's ticker issues to its node", async () => {
    const db = await backend.createDatabase();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-wake-pg-'));
    const [storeA, storeB] = await Promise.all([openStore(db), openStore(db)]);
    const serve = (store: ControlStore) => startControlServer({ store, artifactsDir: path.join(dir, 'artifacts'), host: '127.0.0.1', port: 0, heartbeatSeconds: 30, clock: systemClock, tickMs: 0 });
    // B never ticks (no timer, and deaf to the verdicts' wakes): whatever issues, A's ticker does.
    const quietB: ControlStore = {
      location: storeB.location,
      write: (fn) => storeB.write(fn),
      read: (fn) => storeB.read(fn),
      durable: () => storeB.durable(),
      onRolloutWake: () => () => undefined,
      onNodeWake: (l) => storeB.onNodeWake(l),
      close: () => storeB.close(),
    };
    const [a, b] = await Promise.all([serve(storeA), serve(quietB)]);
    try {
      const control = { clock: { now: () => Date.now() }, server: { url: a.url }, token: async () => (await storeA.write((tx) => createToken(tx, 3_600_000, {}))).token };
      const canary = await new FakeNode(control, 'host-a').enroll();
      const second = await new FakeNode(control, 'host-b').enroll();
      for (const n of [canary, second]) {
        n.setCurrent('web', '1.0.0');
        assert.equal((await n.heartbeat()).status, 200);
      }
      await addWeb(storeA, dir, a.url);
      await startRun(storeA, 'web', '1.1.0', { canary: [canary.nodeId], batch: '1', bakeMs: 0 });
      const w = sendWait(b.url, waitAuth(second.nodeId, second.node.privateKey), '?timeout=30');
      await pause(300);
      assert.equal(w.answered(), false, 'held at B');
      // The canary's verdict, sent to A, wakes A's ticker, which issues batch 1 (the second node).
      await canary.answer('active');
      await a.tick();
      const issued = await storeA.read((tx) => tx.runs.issued(1));
      assert.ok(issued.some((i) => i.nodeId === second.nodeId), 'A issued to the second node');
      const answer = await w.answer;
      assert.deepEqual([answer.status, answer.body], [200, { woken: true }], 'woken by the NOTIFY of A\'s commit, not the 30 s timeout');
      assert.equal((await second.heartbeat()).body.desired.length, 1);
    } finally {
      await a.close();
      await b.close();
      await storeA.close();
      await storeB.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('killing the instance that holds the heartbeat: the agent is held on the next URL of its list, and the change still reaches it', { timeout: 120_000 }, async () => {
    const db = await backend.createDatabase();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-wake-kill-'));
    const store = await openStore(db);
    const args = ['--artifacts', path.join(dir, 'artifacts')];
    const [a, b] = await Promise.all([startControlDaemon(db, 0, 30, { args }), startControlDaemon(db, 0, 30, { args })]);
    let agent: Awaited<ReturnType<typeof startWakeAgent>> | null = null;
    try {
      const control = { clock: { now: () => Date.now() }, server: { url: a.url }, token: async () => (await store.write((tx) => createToken(tx, 3_600_000, {}))).token };
      const node = await new FakeNode(control, 'host-kill').enroll();
      await addWeb(store, dir, a.url);
      agent = await startWakeAgent({ urls: [a.url, b.url], nodeId: node.nodeId, nodeKey: node.node.privateKey, helperKey: node.helper.publicKey, heartbeatSeconds: 30 });
      const ag = agent;
      // Its first heartbeat is answered at once (it had seen no desired set); its second is held.
      await waitUntil('the agent\'s heartbeat to be held on A', 15_000, async () => (ag.posts >= 2 ? true : undefined));
      await pause(300);
      assert.equal(ag.posts, 2);
      assert.equal(ag.gets, 0, 'no wait beside a held heartbeat');
      assert.equal(new URL(ag.client.url).origin, new URL(a.url).origin, 'the agent heartbeated to A and is held there');
      await a.kill();
      // A committed the held heartbeat: B answers its copy SEQ_REPLAYED, and the next is held on B.
      await waitUntil('the agent to be held on B instead', 15_000, async () => (ag.logs.some((l) => /no answer from the control plane: .*trying http:\/\/127\.0\.0\.1/.test(l)) ? true : undefined)).catch((err: Error) => {
        throw new Error(`${err.message}; agent log:\n${ag.logs.join('\n')}`);
      });
      await pause(300);
      const t0 = Date.now();
      await startRun(store, 'web', '1.1.0', { canary: [node.nodeId], batch: '1', bakeMs: 0 });
      await waitUntil('the entry to reach the agent', 10_000, async () => (ag.desired.length > 0 ? true : undefined));
      const took = ag.desired[0]!.at - t0;
      assert.ok(took < 2_000, `the change reached the agent in ${took} ms, through B`);
      assert.equal(new URL(ag.client.url).origin, new URL(b.url).origin);
      assert.ok(ag.logs.some((l) => /woken by the control plane/.test(l)), ag.logs.join('\n'));
      assert.ok(ag.logs.some((l) => /held=woken/.test(l)), 'the held heartbeat on B brought it');
      assert.ok(!ag.logs.some((l) => /control plane unavailable/.test(l)), 'no heartbeat was lost');
    } finally {
      await agent?.stop();
      await a.stop();
      await b.stop();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
