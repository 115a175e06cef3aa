// The helper key is parsed only when a heartbeat relays a receipt (parsing a PEM per heartbeat was
// the largest cost of a heartbeat, see bench/README.md). So a node whose stored helper key is
// unusable keeps heartbeating, while any receipt it relays is refused whole and changes nothing.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { dumpStore, FakeNode, startControlInProcess, type Control } from '../helpers/control-harness.js';

let c: Control;
let node: FakeNode;

before(async () => {
  c = await startControlInProcess();
  node = await new FakeNode(c, 'host-a').enroll();
  c.store.db.prepare('UPDATE nodes SET helperPublicKey = ? WHERE nodeId = ?').run('-----BEGIN PUBLIC KEY-----\nnot a key\n-----END PUBLIC KEY-----\n', node.nodeId);
});

after(() => c.close());

test('a heartbeat without receipts is accepted though the stored helper key does not parse', async () => {
  const a = await node.heartbeat();
  assert.equal(a.status, 200, JSON.stringify(a.body));
  assert.deepEqual(a.body.ackedSeqs, []);
});

test('a heartbeat relaying a receipt is refused UNKNOWN_NODE and changes nothing', async () => {
  const before = dumpStore(c.store);
  const a = await node.heartbeat({ receipts: [node.receipt({ attemptId: 'cli-1' })] });
  assert.equal(a.status, 401, JSON.stringify(a.body));
  assert.equal(a.body.error.code, 'UNKNOWN_NODE');
  assert.deepEqual(dumpStore(c.store), before);
});
