// The node-key cache at enrollment: the enrollment has parsed the node's key to check its
// signature, so the key goes into memory once the enrollment commits, and the node's first
// heartbeat reads no key from the store and parses no PEM (bench/README.md, row 7 round 15: that
// first heartbeat cost ~260 us more of the server's CPU). At start the cache is cold: each node's
// first heartbeat after a restart reads and parses its key once.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import Database from 'better-sqlite3';
import { HEARTBEAT_PATH } from '../../src/core/control-api.js';
import { nodeKeyInMemory } from '../../src/control/heartbeat/accept-heartbeat.js';
import { createKeyCache } from '../../src/control/heartbeat/node-key-cache.js';
import { FakeNode, post, startControlInProcess, type Control } from '../helpers/control-harness.js';

let c: Control;

before(async () => {
  c = await startControlInProcess();
});

after(() => c.close());

test('a node just enrolled has its key in memory before its first heartbeat, which is accepted', async () => {
  const n = await new FakeNode(c, 'fresh').enroll();
  assert.equal(nodeKeyInMemory(c.store, n.nodeId), true);
  const a = await post(c.server.url, HEARTBEAT_PATH, n.body());
  assert.equal(a.status, 200, JSON.stringify(a.body));
});

test('a node re-keyed by another process between its enrollment and its first heartbeat: the new key is accepted, the enrolled one refused', async () => {
  const n = await new FakeNode(c, 'rekeyed').enroll();
  const other = new Database(c.dbFile);
  const fresh = generateKeyPairSync('ed25519');
  other.prepare('UPDATE nodes SET nodePublicKey = ? WHERE nodeId = ?').run(fresh.publicKey.export({ format: 'pem', type: 'spki' }).toString(), n.nodeId);
  other.close();
  const byNew = await post(c.server.url, HEARTBEAT_PATH, n.body({}, fresh.privateKey));
  assert.equal(byNew.status, 200, JSON.stringify(byNew.body));
  const byOld = await post(c.server.url, HEARTBEAT_PATH, n.body());
  assert.equal(byOld.status, 401, JSON.stringify(byOld.body));
  assert.equal(byOld.body.error.code, 'BAD_SIGNATURE');
});

test('a key put in the cache is the newest: the least recently used one is dropped when full', () => {
  const pems = Array.from({ length: 3 }, () => generateKeyPairSync('ed25519').publicKey.export({ format: 'pem', type: 'spki' }).toString());
  const cache = createKeyCache(2);
  const a = cache.parse(pems[0]!);
  cache.parse(pems[1]!);
  cache.put(pems[0]!, a);
  cache.parse(pems[2]!);
  assert.deepEqual(pems.map((p) => cache.has(p)), [true, false, true]);
  assert.equal(cache.parse(pems[0]!), a, 'the same KeyObject, not parsed again');
});
