// Enrollment over real HTTP: a token enrolls once, before it expires, for a request signed by
// the node key it names; every refusal leaves the store as it was.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ENROLL_PATH, enrollAnswerSchema } from '../../src/core/control-api.js';
import { DOMAINS } from '../../src/platform/keys.js';
import { dumpStore, FakeNode, MINUTE, post, startControlInProcess, type Control } from '../helpers/control-harness.js';

let c: Control;
before(async () => {
  c = await startControlInProcess({ heartbeatSeconds: 17 });
});
after(() => c.close());

const nodeCount = () => (c.store.db.prepare('SELECT COUNT(*) AS n FROM nodes').get() as { n: number }).n;

test('a valid enrollment answers a fresh nodeId and the heartbeat interval, and stores both public keys', async () => {
  const n = new FakeNode(c, 'web-1');
  const answer = await post(c.server.url, ENROLL_PATH, n.enrollBody((await c.token())));
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  const parsed = enrollAnswerSchema.parse(answer.body);
  assert.match(parsed.nodeId, /^n-[0-9a-f]{12}$/);
  assert.equal(parsed.heartbeatSeconds, 17);
  const row = c.store.db.prepare('SELECT * FROM nodes WHERE nodeId = ?').get(parsed.nodeId) as Record<string, unknown>;
  assert.equal(row.hostname, 'web-1');
  assert.equal(row.helperPublicKey, n.pem(n.helper.publicKey));
});

test('an enrollment token used twice is refused 401 TOKEN_INVALID the second time and the second enrollment creates nothing', async () => {
  const token = (await c.token());
  assert.equal((await post(c.server.url, ENROLL_PATH, new FakeNode(c, 'first').enrollBody(token))).status, 200);
  const before = dumpStore(c.store);
  const second = await post(c.server.url, ENROLL_PATH, new FakeNode(c, 'second').enrollBody(token));
  assert.deepEqual([second.status, second.body.error.code], [401, 'TOKEN_INVALID']);
  assert.deepEqual(dumpStore(c.store), before);
});

test('an expired enrollment token is refused 401 TOKEN_INVALID and creates nothing', async () => {
  const token = (await c.token(MINUTE));
  c.clock.advance(MINUTE + 1);
  const before = dumpStore(c.store);
  const answer = await post(c.server.url, ENROLL_PATH, new FakeNode(c, 'late').enrollBody(token));
  assert.deepEqual([answer.status, answer.body.error.code], [401, 'TOKEN_INVALID']);
  assert.deepEqual(dumpStore(c.store), before);
});

test('an unknown token is refused 401 TOKEN_INVALID', async () => {
  const answer = await post(c.server.url, ENROLL_PATH, new FakeNode(c).enrollBody('st_this-token-was-never-issued'));
  assert.deepEqual([answer.status, answer.body.error.code], [401, 'TOKEN_INVALID']);
});

test('a refused enrollment does not spend the token: a signature by another key than nodePublicKey is 401 and the token still works', async () => {
  const token = (await c.token());
  const n = new FakeNode(c, 'forged');
  const before = dumpStore(c.store);
  const forged = await post(c.server.url, ENROLL_PATH, n.enrollBody(token, {}, generateKeyPairSync('ed25519').privateKey));
  assert.deepEqual([forged.status, forged.body.error.code], [401, 'BAD_SIGNATURE']);
  const wrongDomain = await post(c.server.url, ENROLL_PATH, n.enrollBody(token, {}, n.node.privateKey, DOMAINS.heartbeat));
  assert.deepEqual([wrongDomain.status, wrongDomain.body.error.code], [401, 'BAD_SIGNATURE']);
  assert.deepEqual(dumpStore(c.store), before);
  assert.equal((await post(c.server.url, ENROLL_PATH, n.enrollBody(token))).status, 200);
});

test('a helper key that is not Ed25519, or a node key that is no PEM, is refused 400 and creates nothing', async () => {
  const token = (await c.token());
  const n = new FakeNode(c);
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'pem', type: 'spki' }).toString();
  const nodes = nodeCount();
  const badHelper = await post(c.server.url, ENROLL_PATH, n.enrollBody(token, { helperPublicKey: ec }));
  assert.deepEqual([badHelper.status, badHelper.body.error.code], [400, 'BAD_BODY']);
  const badNode = await post(c.server.url, ENROLL_PATH, n.enrollBody(token, { nodePublicKey: '-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n' }));
  assert.deepEqual([badNode.status, badNode.body.error.code], [400, 'BAD_BODY']);
  assert.equal(nodeCount(), nodes);
});

test('the database holds only the hash of a token, never the token', async () => {
  const token = (await c.token());
  c.store.db.pragma('wal_checkpoint(TRUNCATE)');
  assert.equal(readFileSync(c.dbFile).includes(Buffer.from(token)), false);
});
