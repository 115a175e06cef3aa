// A node must not enroll with another node's helper public key: it would then relay that node's
// receipts (those made before its enrollment name no node) as its own. The enrollment carries
// the helper key's own signature over the enroll payload (helperSig, steward-enroll-helper-v1),
// which the control plane checks before it spends the token. Real control plane, real HTTP,
// real SQLite store.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENROLL_PATH } from '../../src/core/control-api.js';
import { DOMAINS } from '../../src/platform/keys.js';
import { dumpStore, FakeNode, post, startControlInProcess, type Control } from '../helpers/control-harness.js';

let c: Control;
before(async () => {
  c = await startControlInProcess();
});
after(() => c.close());

test('an enrollment naming another node\'s helper public key, without that key\'s signature, is refused 401 and spends no token', async () => {
  const victim = await new FakeNode(c, 'victim').enroll();
  const thief = new FakeNode(c, 'thief');
  const token = await c.token();
  const before = dumpStore(c.store);
  const stolen = { helperPublicKey: thief.pem(victim.helper.publicKey) };

  // With no helperSig at all (as before this proof existed), and signed by the thief's own helper key.
  for (const helperSigner of [null, thief.helper.privateKey]) {
    const a = await post(c.server.url, ENROLL_PATH, thief.enrollBody(token, stolen, thief.node.privateKey, DOMAINS.enroll, helperSigner));
    assert.deepEqual([a.status, a.body.error.code], [401, 'BAD_SIGNATURE'], JSON.stringify(a.body));
    assert.match(a.body.error.message, /helperSig/);
  }
  assert.deepEqual(dumpStore(c.store), before, 'nothing stored, the token not spent');

  // With its own helper key the thief enrolls with the same token.
  assert.equal((await post(c.server.url, ENROLL_PATH, thief.enrollBody(token))).status, 200);
});

test('the victim\'s own enrollment proof cannot be replayed for another node key', async () => {
  const victim = new FakeNode(c, 'victim-2');
  const victimBody = JSON.parse(victim.enrollBody(await c.token()));
  assert.equal((await post(c.server.url, ENROLL_PATH, JSON.stringify(victimBody))).status, 200);

  // The thief copies the victim's helperSig onto its own payload, which names the victim's helper
  // key and a fresh token: the signature is over other bytes.
  const thief = new FakeNode(c, 'thief-2');
  const token = await c.token();
  const before = dumpStore(c.store);
  const own = JSON.parse(thief.enrollBody(token, { helperPublicKey: thief.pem(victim.helper.publicKey) }, thief.node.privateKey, DOMAINS.enroll, null));
  const replayed = await post(c.server.url, ENROLL_PATH, JSON.stringify({ ...own, helperSig: victimBody.helperSig }));
  assert.deepEqual([replayed.status, replayed.body.error.code], [401, 'BAD_SIGNATURE']);
  // Nor does a helper signature under another domain (the node key's) stand for the proof.
  const wrongDomain = JSON.parse(thief.enrollBody(token, {}, thief.node.privateKey, DOMAINS.enroll, null));
  const asEnroll = JSON.parse(thief.enrollBody(token, {}, thief.helper.privateKey, DOMAINS.enroll, null));
  const misdomained = await post(c.server.url, ENROLL_PATH, JSON.stringify({ ...wrongDomain, helperSig: asEnroll.sig }));
  assert.deepEqual([misdomained.status, misdomained.body.error.code], [401, 'BAD_SIGNATURE']);
  assert.deepEqual(dumpStore(c.store), before);
});

test('a node enrolled before enrollments proved the helper key still heartbeats and relays its receipts', async () => {
  // As an older control plane stored it: no proof was ever asked for.
  const old = new FakeNode(c, 'old-node');
  old.nodeId = 'n-0123456789ab';
  await c.store.write((tx) => tx.nodes.insert({ nodeId: old.nodeId, hostname: old.hostname, nodePublicKey: old.pem(old.node.publicKey), helperPublicKey: old.pem(old.helper.publicKey), enrolledAt: c.clock.now(), labels: {} }));
  const a = await old.heartbeat({ receipts: [old.receipt()] });
  assert.equal(a.status, 200, JSON.stringify(a.body));
  assert.deepEqual(a.body.ackedSeqs, [1]);
});
