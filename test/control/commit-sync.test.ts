// The server's connection commits with synchronous=NORMAL and fsyncs the WAL itself, in the
// thread pool (store/commit-sync.ts), so its one thread goes on working during the fsync. What
// must hold: nothing resting on a write is answered before an fsync that started after that
// write's commit has returned; a failed fsync fails what waits for it and everything after, and
// is never retried; the real fsync is an fdatasync of the store's WAL file.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { ENROLL_PATH } from '../../src/core/control-api.js';
import { createHeartbeatBatcher } from '../../src/control/heartbeat/group-commit.js';
import type { Answer } from '../../src/control/server/answer.js';
import { createCommitSync, walFileOf } from '../../src/control/store/sqlite/commit-sync.js';
import { openSqliteStore } from '../../src/control/store/sqlite/open-sqlite-store.js';
import { enrollNodes, FakeNode, post, startControlInProcess, type Control } from '../helpers/control-harness.js';

// A sync seam whose fsyncs end only when the test says, each as it chooses.
class GatedSync {
  calls: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  sync = () => new Promise<void>((resolve, reject) => void this.calls.push({ resolve, reject }));
}

const turn = () => new Promise((r) => setImmediate(r));
const pause = () => new Promise((r) => setTimeout(r, 10));
// Turns of the event loop until `cond` holds (bounded in count; nothing is timed). A heartbeat's
// signature is checked in the thread pool, which a busy machine may not run within 200 bare
// turns: the last 200 turns each wait 10 ms too.
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400 && !cond(); i++) await (i < 200 ? turn() : pause());
  assert.ok(cond(), `never happened: ${what}`);
}

function watch<T>(p: Promise<T>): { settled: () => boolean; value: () => T | undefined; error: () => unknown } {
  let settled = false;
  let value: T | undefined;
  let error: unknown;
  p.then((v) => ((settled = true), (value = v)), (e: unknown) => ((settled = true), (error = e)));
  return { settled: () => settled, value: () => value, error: () => error };
}

let c: Control;
let nodes: FakeNode[] = [];

before(async () => {
  c = await startControlInProcess();
  nodes = await enrollNodes(c, 3);
});

after(() => c.close());

const lastSeqOf = (n: FakeNode) => (c.store.db.prepare('SELECT lastSeq FROM nodes WHERE nodeId = ?').get(n.nodeId) as { lastSeq: number }).lastSeq;

test('a heartbeat is answered only once an fsync that started after its commit has returned', async () => {
  const gate = new GatedSync();
  const sync = createCommitSync(c.store, { sync: gate.sync });
  const b = createHeartbeatBatcher({ store: c.store, heartbeatSeconds: 30, durable: sync.durable });
  const [x, y] = nodes as [FakeNode, FakeNode];
  const first = watch(b.submit(Buffer.from(x.body())));
  await until(() => gate.calls.length === 1, 'the first fsync starts');
  assert.equal(lastSeqOf(x), x.seq, 'committed (visible to the connection) before the fsync returns');
  // Committed while the first fsync runs: that fsync does not cover it.
  const second = watch(b.submit(Buffer.from(y.body())));
  await until(() => lastSeqOf(y) === y.seq, 'the second heartbeat commits');
  assert.equal(gate.calls.length, 1, 'one fsync at a time');
  assert.equal(first.settled(), false, 'not answered before its fsync returned');
  gate.calls[0]!.resolve();
  await until(() => first.settled(), 'the first is answered');
  assert.equal((first.value() as Answer).status, 200);
  assert.equal(second.settled(), false, 'an fsync that started before its commit does not answer it');
  await until(() => gate.calls.length === 2, 'the next fsync starts for the second');
  gate.calls[1]!.resolve();
  await until(() => second.settled(), 'the second is answered');
  assert.equal((second.value() as Answer).status, 200);
  assert.equal(sync.syncs(), 2);
});

test('a failed fsync fails what waits for it and everything after, and is not retried', async () => {
  const gate = new GatedSync();
  const sync = createCommitSync(c.store, { sync: gate.sync });
  const b = createHeartbeatBatcher({ store: c.store, heartbeatSeconds: 30, durable: sync.durable });
  const [x, y, z] = nodes as [FakeNode, FakeNode, FakeNode];
  const first = watch(b.submit(Buffer.from(x.body())));
  await until(() => gate.calls.length === 1, 'the fsync starts');
  const second = watch(b.submit(Buffer.from(y.body())));
  await until(() => lastSeqOf(y) === y.seq, 'the second commits during the fsync');
  gate.calls[0]!.reject(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
  await until(() => first.settled() && second.settled(), 'both are settled');
  for (const w of [first, second]) assert.equal((w.error() as { code?: string })?.code, 'IO_ERROR');
  const third = watch(b.submit(Buffer.from(z.body())));
  await until(() => third.settled(), 'a later heartbeat is settled');
  assert.equal((third.error() as { code?: string })?.code, 'IO_ERROR');
  assert.equal(gate.calls.length, 1, 'no fsync after a failed one');
});

test('an enrollment is answered only after the fsync of its commit', async () => {
  const gate = new GatedSync();
  const ctl = await startControlInProcess({ groupSync: { sync: gate.sync } });
  try {
    const n = new FakeNode(ctl, 'late');
    const answer = watch(post(ctl.server.url, ENROLL_PATH, n.enrollBody(await ctl.token())));
    await until(() => gate.calls.length === 1, 'the fsync starts');
    // The node row is committed, but the answer that names it waits.
    await until(() => (ctl.store.db.prepare('SELECT COUNT(*) AS n FROM nodes').get() as { n: number }).n === 1, 'the node is committed');
    for (let i = 0; i < 20; i++) await turn();
    assert.equal(answer.settled(), false);
    gate.calls[0]!.resolve();
    await until(() => answer.settled(), 'the enrollment is answered');
    assert.equal((answer.value() as { status: number }).status, 200);
  } finally {
    await ctl.close();
  }
});

test('the server connection runs synchronous=NORMAL and its fsync is an fdatasync of the WAL; every other opener stays FULL', async () => {
  assert.equal(c.store.db.pragma('synchronous', { simple: true }), 1, 'the server connection: NORMAL');
  const other = openSqliteStore(c.dbFile);
  try {
    assert.equal(other.db.pragma('synchronous', { simple: true }), 2, 'another opener (the CLI): FULL');
  } finally {
    await other.close();
  }
  // Spy on the file handles the real syncer opens (fs.promises is one shared object), on a server
  // started with the spy in place.
  const opened: string[] = [];
  let datasyncs = 0;
  const realOpen = fs.promises.open;
  fs.promises.open = async (...a: Parameters<typeof realOpen>) => {
    const fh = await realOpen(...a);
    opened.push(String(a[0]));
    const realDatasync = fh.datasync.bind(fh);
    fh.datasync = async () => (datasyncs++, realDatasync());
    return fh;
  };
  let wal = '';
  try {
    const ctl = await startControlInProcess();
    try {
      wal = walFileOf(ctl.store);
      const n = await new FakeNode(ctl, 'spied').enroll();
      n.setCurrent('web', '1.0.0');
      assert.equal((await n.heartbeat()).status, 200);
    } finally {
      await ctl.close();
    }
  } finally {
    fs.promises.open = realOpen;
  }
  assert.deepEqual(opened.filter((f) => f === wal), [wal], `the WAL was opened once to sync: ${opened.join(', ')}`);
  assert.ok(datasyncs >= 2, 'and fdatasynced for the enrollment and the heartbeat');
});
