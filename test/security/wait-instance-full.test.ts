// An instance holds at most its maximum of wake-up waits (serve --max-waits): past it
// a wait is 503 BUSY with Retry-After, and the waits it holds are untouched. Many nodes each
// within their own limit cannot take the server's sockets.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startControlServer, type ControlServer } from '../../src/control/server/control-server.js';
import { desiredChanged } from '../../src/control/rollouts/desired-changed.js';
import { enrollNodes, type Control, FakeNode, startControlInProcess } from '../helpers/control-harness.js';
import { createToken } from '../../src/control/enroll/tokens.js';
import { openStore } from '../../src/control/store/open-store.js';
import { controlCli, startControlDaemon } from '../helpers/fleet.js';
import { pause, sendWait, waitAuth } from '../helpers/wait-client.js';

let c: Control;
let small: ControlServer;
let nodes: FakeNode[];

before(async () => {
  c = await startControlInProcess({ heartbeatSeconds: 30 });
  nodes = await enrollNodes(c, 4);
  small = await startControlServer({ store: c.store, artifactsDir: c.dir, host: '127.0.0.1', port: 0, heartbeatSeconds: 30, clock: c.clock, tickMs: 0, maxWaits: 3 });
});
after(async () => {
  await small.close();
  await c.close();
});

test('past its maximum an instance answers a wait 503 BUSY with Retry-After; the waits it holds are still answered', async () => {
  const held = nodes.slice(0, 3).map((n) => sendWait(small.url, waitAuth(n.nodeId, n.node.privateKey, c.clock.now())));
  await pause(200);
  const last = nodes[3]!;
  const over = await sendWait(small.url, waitAuth(last.nodeId, last.node.privateKey, c.clock.now())).answer;
  assert.equal(over.status, 503);
  assert.equal(over.body.error.code, 'BUSY');
  assert.match(over.body.error.message, /holds its most waits \(3\)/);
  assert.equal(over.headers['retry-after'], '60');
  assert.ok(held.every((w) => !w.answered()));
  await c.store.write((tx) => desiredChanged(tx, nodes.slice(0, 3).map((n) => n.nodeId)));
  for (const w of held) assert.deepEqual((await w.answer).body, { woken: true });
});

test('serve --max-waits takes a whole number from 1 to 1,000,000; anything else is USAGE, before it listens', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-max-waits-'));
  try {
    for (const bad of ['0', '-1', 'many', '1000001']) {
      const r = await controlCli(path.join(dir, 'control.db'), ['serve', '--init', '--listen', '127.0.0.1:0', '--max-waits', bad]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /--max-waits .* is not an integer from 1 to 1000000/);
      assert.doesNotMatch(r.stdout, /listening/);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('serve --max-waits 1: the second node to wait on the instance is answered 503 BUSY', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-max-waits-serve-'));
  const db = path.join(dir, 'control.db');
  const d = await startControlDaemon(db, 0, 30, { args: ['--max-waits', '1', '--artifacts', path.join(dir, 'artifacts')] });
  const store = await openStore(db);
  try {
    const control = { clock: { now: () => Date.now() }, server: { url: d.url }, token: async () => (await store.write((tx) => createToken(tx, 3_600_000, {}))).token };
    const [first, second] = [await new FakeNode(control, 'host-1').enroll(), await new FakeNode(control, 'host-2').enroll()];
    const held = sendWait(d.url, waitAuth(first.nodeId, first.node.privateKey));
    await pause(200);
    const over = await sendWait(d.url, waitAuth(second.nodeId, second.node.privateKey)).answer;
    assert.equal(over.status, 503);
    assert.match(over.body.error.message, /holds its most waits \(1\)/);
    assert.equal(held.answered(), false);
    held.abort();
  } finally {
    await d.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
