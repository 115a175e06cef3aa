// An instance holds at most its maximum of wake-up waits (ControlServerOptions.maxWaits): past it
// a wait is 503 BUSY with Retry-After, and the waits it holds are untouched. Many nodes each
// within their own limit cannot take the server's sockets.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startControlServer, type ControlServer } from '../../src/control/server/control-server.js';
import { desiredChanged } from '../../src/control/rollouts/desired-changed.js';
import { enrollNodes, type Control, type FakeNode, startControlInProcess } from '../helpers/control-harness.js';
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
