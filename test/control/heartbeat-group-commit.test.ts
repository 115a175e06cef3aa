// Group commit: heartbeats that arrive together are recorded in one transaction (one fsync) and
// each keeps the meaning it has alone. Commits are counted through the batcher's stats, never
// by timing: bodies submitted in one turn of the event loop are one batch by construction.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import Database from 'better-sqlite3';
import { HEARTBEAT_PATH } from '../../src/core/control-api.js';
import { createHeartbeatBatcher, type GroupCommitHooks, type HeartbeatBatcher } from '../../src/control/heartbeat/group-commit.js';
import type { Answer } from '../../src/control/server/answer.js';
import { dumpStore, enrollNodes, FakeNode, post, request, startControlInProcess, type Control } from '../helpers/control-harness.js';
import { StewardError } from '../../src/core/errors.js';

let c: Control;
let nodes: FakeNode[] = [];

before(async () => {
  c = await startControlInProcess();
  nodes = await enrollNodes(c, 12);
});

after(() => c.close());

function batcher(opts: { maxBatch?: number; hooks?: GroupCommitHooks } = {}): HeartbeatBatcher {
  return createHeartbeatBatcher({ store: c.store, heartbeatSeconds: 30, ...opts });
}

const nodeRow = (n: FakeNode) => c.store.db.prepare('SELECT * FROM nodes WHERE nodeId = ?').get(n.nodeId) as Record<string, unknown>;
const receiptsOf = (n: FakeNode) => (c.store.db.prepare('SELECT seq FROM receipts WHERE nodeId = ? ORDER BY seq').all(n.nodeId) as Array<{ seq: number }>).map((r) => r.seq);
const errorOf = (a: Answer) => (a.body as { error: { code: string } }).error.code;

// Submits every body in this turn of the event loop (one batch, up to maxBatch) and settles all.
function submitAll(b: HeartbeatBatcher, bodies: string[]): Promise<Array<PromiseSettledResult<Answer>>> {
  return Promise.allSettled(bodies.map((x) => b.submit(Buffer.from(x))));
}

function answers(settled: Array<PromiseSettledResult<Answer>>): Answer[] {
  return settled.map((s) => {
    if (s.status === 'rejected') throw s.reason;
    return s.value;
  });
}

test('heartbeats submitted together share one commit, and each is recorded exactly once', async () => {
  const b = batcher();
  const bodies = nodes.map((n) => n.body({ receipts: [n.receipt()] }));
  const got = answers(await submitAll(b, bodies));
  assert.deepEqual(b.stats(), { commits: 1, heartbeats: nodes.length });
  for (const [i, n] of nodes.entries()) {
    assert.equal(got[i]!.status, 200, JSON.stringify(got[i]!.body));
    assert.deepEqual((got[i]!.body as { ackedSeqs: number[] }).ackedSeqs, [n.receiptSeq]);
    assert.equal(nodeRow(n).lastSeq, n.seq);
    assert.deepEqual(receiptsOf(n), [n.receiptSeq]);
  }
});

test('a batch holds at most maxBatch heartbeats; the rest go in the next commits', async () => {
  const b = batcher({ maxBatch: 5 });
  const got = answers(await submitAll(b, nodes.map((n) => n.body())));
  assert.deepEqual(b.stats(), { commits: 3, heartbeats: 12 });
  assert.ok(got.every((a) => a.status === 200));
  for (const n of nodes) assert.equal(nodeRow(n).lastSeq, n.seq);
});

test('two heartbeats of one node in one batch behave as if sent one after the other', async () => {
  const [n] = nodes;
  const b = batcher();
  // In order: both accepted, the second one's seq is the last.
  const inOrder = answers(await submitAll(b, [n!.body(), n!.body()]));
  assert.deepEqual(inOrder.map((a) => a.status), [200, 200]);
  assert.equal(nodeRow(n!).lastSeq, n!.seq);
  // Out of order: the later seq first, then the earlier one is a replay of it.
  const s = n!.seq;
  const outOfOrder = answers(await submitAll(b, [n!.body({ seq: s + 2 }), n!.body({ seq: s + 1 })]));
  n!.seq = s + 2;
  assert.deepEqual(outOfOrder.map((a) => a.status), [200, 409]);
  assert.equal(errorOf(outOfOrder[1]!), 'SEQ_REPLAYED');
  assert.equal((outOfOrder[1]!.body as { lastSeq: number }).lastSeq, s + 2);
  // One receipt relayed by both: stored once, acked to both.
  const r = n!.receipt();
  const twice = answers(await submitAll(b, [n!.body({ receipts: [r] }), n!.body({ receipts: [r] })]));
  assert.deepEqual(twice.map((a) => [a.status, (a.body as { ackedSeqs: number[] }).ackedSeqs]), [[200, [n!.receiptSeq]], [200, [n!.receiptSeq]]]);
  assert.equal(receiptsOf(n!).filter((x) => x === n!.receiptSeq).length, 1);
  // Another envelope under the seq the first heartbeat stores: rejected, as it would be after it.
  const seq = n!.receiptSeq + 1;
  const clash = answers(await submitAll(b, [n!.body({ receipts: [n!.receipt({ seq, attemptId: 'manual-a' })] }), n!.body({ receipts: [n!.receipt({ seq, attemptId: 'manual-b' })] })]));
  assert.deepEqual(clash.map((a) => a.status), [200, 400]);
  assert.equal(errorOf(clash[1]!), 'RECEIPT_REJECTED');
  assert.equal(b.stats().commits, 4);
});

test('signatures are checked in the thread pool, but heartbeats are recorded in the order they came', async () => {
  const n = nodes[2]!;
  const s = n.seq;
  // The first body's check ends 30 ms after the second's: recorded first all the same, so both
  // are accepted (the second, recorded first, would make the first a replay).
  let late = s + 1;
  const b = batcher({ hooks: { afterOpen: async (hb) => {
    if (hb.nodeId === n.nodeId && hb.seq === late) await new Promise((r) => setTimeout(r, 30));
  } } });
  const got = answers(await submitAll(b, [n.body(), n.body()]));
  assert.deepEqual(got.map((a) => a.status), [200, 200], JSON.stringify(got.map((a) => a.body)));
  assert.equal(nodeRow(n).lastSeq, s + 2);
  assert.deepEqual(b.stats(), { commits: 1, heartbeats: 2 });
  // Bodies submitted together share one commit even when the later one's check ends late: the
  // batch waits for the checks already running when it is taken.
  late = s + 4;
  const other = nodes[1]!;
  const together = answers(await submitAll(b, [n.body(), n.body(), other.body()]));
  assert.deepEqual(together.map((a) => a.status), [200, 200, 200]);
  assert.deepEqual(b.stats(), { commits: 2, heartbeats: 5 });
  assert.equal(nodeRow(n).lastSeq, s + 4);
  // A rejection found before the queue (an unknown key) answers at once and holds nobody up.
  const stranger = new FakeNode(c, 'stranger');
  stranger.nodeId = n.nodeId;
  const mixed = await Promise.all([b.submit(Buffer.from(stranger.body())), b.submit(Buffer.from(n.body()))]);
  assert.deepEqual(mixed.map((a) => a.status), [401, 200]);
  assert.equal(errorOf(mixed[0]!), 'BAD_SIGNATURE');
  assert.equal(nodeRow(n).lastSeq, n.seq);
});

test('a rejected heartbeat in the middle of a batch changes nothing and does not affect its neighbours', async () => {
  const [x, y, z] = nodes.slice(3, 6) as [FakeNode, FakeNode, FakeNode];
  const yBefore = nodeRow(y);
  const yReceipts = receiptsOf(y);
  const b = batcher();
  const got = answers(await submitAll(b, [
    x.body({ receipts: [x.receipt()] }),
    y.body({ seq: 1, receipts: [y.receipt()] }), // a replayed seq
    y.body({ receipts: [x.receipt({ seq: 99 })] }), // another node's receipt
    z.body({ receipts: [z.receipt()] }),
  ]));
  assert.deepEqual(got.map((a) => a.status), [200, 409, 400, 200]);
  assert.deepEqual(got.slice(1, 3).map(errorOf), ['SEQ_REPLAYED', 'RECEIPT_REJECTED']);
  assert.deepEqual(b.stats(), { commits: 1, heartbeats: 4 });
  assert.deepEqual(nodeRow(y), yBefore);
  assert.deepEqual(receiptsOf(y), yReceipts);
  for (const n of [x, z]) {
    assert.equal(nodeRow(n).lastSeq, n.seq);
    assert.ok(receiptsOf(n).includes(n.receiptSeq));
  }
});

test('a heartbeat whose writes fail is rolled back alone, to its savepoint; its neighbours commit', async () => {
  const [x, y, z] = nodes.slice(6, 9) as [FakeNode, FakeNode, FakeNode];
  const yBefore = nodeRow(y);
  const yReceipts = receiptsOf(y);
  const boom = new Error('write failed (test fault)');
  const b = batcher({ hooks: { afterRecord: (nodeId) => { if (nodeId === y.nodeId) throw boom; } } });
  const settled = await submitAll(b, [x, y, z].map((n) => n.body({ receipts: [n.receipt()] })));
  assert.equal(settled[1]!.status, 'rejected');
  assert.equal((settled[1] as PromiseRejectedResult).reason, boom);
  assert.deepEqual([settled[0]!, settled[2]!].map((s) => s.status === 'fulfilled' && s.value.status), [200, 200]);
  assert.deepEqual(b.stats(), { commits: 1, heartbeats: 3 });
  assert.deepEqual(nodeRow(y), yBefore, 'the failed heartbeat left its node as it was');
  assert.deepEqual(receiptsOf(y), yReceipts, 'and stored none of its receipts');
  for (const n of [x, z]) {
    assert.equal(nodeRow(n).lastSeq, n.seq);
    assert.ok(receiptsOf(n).includes(n.receiptSeq));
  }
});

test('a COMMIT that fails fails every heartbeat of its batch with the error and records none', async () => {
  // A real failing COMMIT: a deferred foreign key left violated is checked at COMMIT and refuses it.
  c.store.db.exec('CREATE TEMP TABLE fault_parent (id INTEGER PRIMARY KEY); CREATE TEMP TABLE fault_child (pid INTEGER REFERENCES fault_parent (id) DEFERRABLE INITIALLY DEFERRED)');
  let armed = true;
  const b = batcher({ hooks: { beforeCommit: () => { if (armed) c.store.db.prepare('INSERT INTO fault_child (pid) VALUES (42)').run(); } } });
  const group = nodes.slice(9, 12);
  const before = dumpStore(c.store);
  const bodies = group.map((n) => n.body({ receipts: [n.receipt()] }));
  // A rejected heartbeat inside the batch gets the commit's error too: nothing of a failed batch is answered.
  bodies.push(group[0]!.body({ seq: 1 }));
  const settled = await submitAll(b, bodies);
  for (const s of settled) {
    assert.equal(s.status, 'rejected');
    assert.ok((s as PromiseRejectedResult).reason instanceof Database.SqliteError);
    assert.equal(((s as PromiseRejectedResult).reason as InstanceType<typeof Database.SqliteError>).code, 'SQLITE_CONSTRAINT_FOREIGNKEY');
  }
  assert.deepEqual(b.stats(), { commits: 0, heartbeats: 0 });
  assert.deepEqual(dumpStore(c.store), before, 'nothing of the batch is in the store');
  assert.equal(c.store.db.inTransaction, false);
  // The agents resend with their next seqs; the next commit works.
  armed = false;
  const got = answers(await submitAll(b, group.map((n) => n.body({ receipts: [n.receipt({ seq: n.receiptSeq })] }))));
  assert.ok(got.every((a) => a.status === 200));
  assert.equal(b.stats().commits, 1);
});

test('over HTTP, a failed commit answers 500 INTERNAL to every heartbeat in flight and records none', async () => {
  let armed = true;
  const d = await startControlInProcess({
    heartbeatBatch: { hooks: { beforeCommit: () => { if (armed) throw new Database.SqliteError('disk I/O error (test fault)', 'SQLITE_IOERR'); } } },
  });
  try {
    const group: FakeNode[] = [];
    for (let i = 0; i < 6; i++) group.push(await new FakeNode(d, `host-${i}`).enroll());
    const before = dumpStore(d.store);
    const got = await Promise.all(group.map((n) => post(d.server.url, HEARTBEAT_PATH, n.body({ receipts: [n.receipt()] }))));
    for (const a of got) {
      assert.equal(a.status, 500, JSON.stringify(a.body));
      assert.equal(a.body.error.code, 'INTERNAL');
    }
    assert.deepEqual(dumpStore(d.store), before);
    assert.equal(d.server.heartbeatStats().commits, 0);
    armed = false;
    const again = await Promise.all(group.map((n) => post(d.server.url, HEARTBEAT_PATH, n.body({ receipts: [n.receipt({ seq: n.receiptSeq })] }))));
    assert.ok(again.every((a) => a.status === 200));
    const stats = d.server.heartbeatStats();
    assert.equal(stats.heartbeats, group.length);
    assert.ok(stats.commits >= 1 && stats.commits <= group.length);
    assert.equal((d.store.db.prepare('SELECT count(*) AS n FROM receipts').get() as { n: number }).n, group.length);
  } finally {
    await d.close();
  }
});

test('over HTTP, a commit the database kept refusing (BUSY) answers 503 with a Retry-After to every heartbeat in flight and records none', async () => {
  let armed = true;
  const d = await startControlInProcess({
    heartbeatBatch: { hooks: { beforeCommit: () => { if (armed) throw new StewardError('BUSY', 'the control plane database postgres://user:secret@db/x refused the transaction 8 times (40001: test)'); } } },
  });
  try {
    const group: FakeNode[] = [];
    for (let i = 0; i < 3; i++) group.push(await new FakeNode(d, `host-${i}`).enroll());
    const before = dumpStore(d.store);
    const got = await Promise.all(group.map((n) => request(d.server.url, HEARTBEAT_PATH, 'POST', n.body({ receipts: [n.receipt()] }))));
    for (const a of got) {
      assert.deepEqual([a.status, a.body.error.code, a.headers['retry-after']], [503, 'BUSY', '1'], JSON.stringify(a.body));
      assert.doesNotMatch(a.body.error.message, /secret|postgres:/, "the database's location stays on the server");
    }
    assert.deepEqual(dumpStore(d.store), before);
    armed = false;
    const again = await Promise.all(group.map((n) => post(d.server.url, HEARTBEAT_PATH, n.body({ receipts: [n.receipt({ seq: n.receiptSeq })] }))));
    assert.ok(again.every((a) => a.status === 200));
  } finally {
    await d.close();
  }
});

test('a node removed or re-keyed after its heartbeat was verified but before the commit is judged as it is at the commit', async () => {
  const d = await startControlInProcess();
  try {
    const b = createHeartbeatBatcher({ store: d.store, heartbeatSeconds: 30 });
    // Re-keyed (the store now holds another key for it): the old key's signature no longer holds.
    const k = await new FakeNode(d, 'host-rekeyed').enroll();
    const other = new FakeNode(d, 'other');
    const rekeyed = b.submit(Buffer.from(k.body()));
    // Queued after submit()'s read of the key, before the batch's transaction.
    void d.store.write(async () => void d.store.db.prepare('UPDATE nodes SET nodePublicKey = ? WHERE nodeId = ?').run(other.pem(other.node.publicKey), k.nodeId));
    const r = await rekeyed;
    assert.equal(r.status, 401, JSON.stringify(r.body));
    assert.equal(errorOf(r), 'BAD_SIGNATURE');
    assert.equal((d.store.db.prepare('SELECT lastSeq FROM nodes WHERE nodeId = ?').get(k.nodeId) as { lastSeq: number }).lastSeq, 0);
    // Removed: unknown.
    const n = await new FakeNode(d, 'host-gone').enroll();
    const pending = b.submit(Buffer.from(n.body({ receipts: [n.receipt()] })));
    // The signature is checked in submit(); the commit runs on a later turn of the event loop.
    assert.equal(await d.store.write((tx) => tx.nodes.remove(n.nodeId)), true);
    const a = await pending;
    assert.equal(a.status, 401, JSON.stringify(a.body));
    assert.equal(errorOf(a), 'UNKNOWN_NODE');
    assert.equal((d.store.db.prepare('SELECT count(*) AS n FROM receipts').get() as { n: number }).n, 0);
  } finally {
    await d.close();
  }
});

test('a node re-keyed by another process after its key was remembered: the new key is accepted, the old one refused', async () => {
  const n = nodes[5]!;
  assert.equal((await post(c.server.url, HEARTBEAT_PATH, n.body())).status, 200, 'the old key, remembered now');
  // Another process (the CLI, a repair) changes the node's key in the store.
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

test('a node removed by another process after its key was remembered is refused as unknown', async () => {
  const n = nodes[6]!;
  assert.equal((await post(c.server.url, HEARTBEAT_PATH, n.body())).status, 200);
  const other = new Database(c.dbFile);
  other.prepare('DELETE FROM nodes WHERE nodeId = ?').run(n.nodeId);
  other.close();
  const after = await post(c.server.url, HEARTBEAT_PATH, n.body());
  assert.equal(after.status, 401, JSON.stringify(after.body));
  assert.equal(after.body.error.code, 'UNKNOWN_NODE');
});
