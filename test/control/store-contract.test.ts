// The store contract of docs/design.md §11 (src/control/store/store.ts), held on both backends (SQLite,
// and PostgreSQL on a throwaway cluster, docs/design.md §13): transactions never interleave across an
// await, every uniqueness is the database's own constraint (the code's checks are bypassed here
// on purpose), and decisions take the store's clock, fixed for the whole transaction.
import { ANALYSIS_OFF } from '../../src/core/run-analysis.js';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { hashToken } from '../../src/control/enroll/tokens.js';
import type { ControlStore, NewRun, StoreTx } from '../../src/control/store/store.js';
import { DOMAINS, generateKeyPair, parsePrivateKey, signEnvelope } from '../../src/platform/keys.js';
import { FakeClock, T0 } from '../helpers/control-harness.js';
import { describeEachBackend } from '../helpers/store-backends.js';

const run = (over: Partial<NewRun> = {}): NewRun => ({
  app: 'web', version: '1.0.0', startedAt: T0, heartbeatIntervalMs: 30_000, selector: '', canaries: 1, namedCanaries: [], canarySeed: 1, batch: '1', bakeMs: 0,
  maxFailures: 0, maxRefused: '50%', maxFetchFailures: '20%', failuresCarried: 0, verdictTimeoutMs: 60_000, allowRetryReverted: false, windows: [], tz: 'UTC', startAt: null, behind: false, retryOf: null, analysis: ANALYSIS_OFF, ...over,
});

const pause = () => new Promise((r) => setImmediate(r));

describeEachBackend((backend) => {
  let store: ControlStore;
  const clock = new FakeClock();

  before(async () => {
    store = await backend.open({ clock });
    const key = generateKeyPair();
    await store.write(async (tx) => {
      for (const id of ['n-a', 'n-b']) await tx.nodes.insert({ nodeId: id, hostname: id, nodePublicKey: key.publicPem, helperPublicKey: key.publicPem, enrolledAt: T0, labels: {} });
    });
  });
  after(() => store.close());

  test('two writes that await in the middle never interleave: the second sees all of the first or none', async () => {
    const seen: string[] = [];
    const first = store.write(async (tx) => {
      await tx.settings.set('k', 'first-half');
      await pause(); // another turn of the event loop, inside the transaction
      await tx.settings.set('k', 'first');
    });
    const second = store.write(async (tx) => seen.push((await tx.settings.get('k')) ?? 'none'));
    const reader = store.read(async (tx) => seen.push(`read:${(await tx.settings.get('k')) ?? 'none'}`));
    await Promise.all([first, second, reader]);
    assert.deepEqual(seen, ['first', 'read:first']);
  });

  test('a write that throws leaves nothing of itself, and the next transaction runs', async () => {
    await assert.rejects(
      store.write(async (tx) => {
        await tx.settings.set('gone', 'x');
        await pause();
        throw new Error('boom');
      }),
      /boom/,
    );
    assert.equal(await store.read((tx) => tx.settings.get('gone')), null);
  });

  test('a savepoint undoes only its own writes', async () => {
    await store.write(async (tx) => {
      await tx.settings.set('outer', 'kept');
      await assert.rejects(tx.savepoint(async () => {
        await tx.settings.set('inner', 'x');
        throw new Error('inner failure');
      }));
    });
    assert.deepEqual(await store.read(async (tx) => [await tx.settings.get('outer'), await tx.settings.get('inner')]), ['kept', null]);
  });

  test('runs of one app may run side by side in the store (who goes alone is start-run.ts\'s check): runningOf lists them newest first, active is the newest', async () => {
    const id = await store.write((tx) => tx.runs.insert(run(), [{ nodeId: 'n-a', lastHeartbeatAt: T0, listedApp: true }]));
    const beside = await store.write((tx) => tx.runs.insert(run(), []));
    assert.deepEqual((await store.read((tx) => tx.runs.runningOf('web'))).map((r) => r.id), [beside, id]);
    assert.equal((await store.read((tx) => tx.runs.active('web')))?.id, beside);
    await store.write((tx) => tx.runs.insert(run({ app: 'api' }), []));
    await store.write((tx) => tx.runs.end(id, 'stopped', undefined, T0));
    await store.write((tx) => tx.runs.end(beside, 'stopped', undefined, T0));
    assert.deepEqual(await store.read((tx) => tx.runs.runningOf('web')), []);
    await store.write((tx) => tx.runs.insert(run(), []));
  });

  test('one attempt per run and node (a second is not recorded), and one attemptId ever, are database constraints', async () => {
    const runId = await store.write(async (tx) => (await tx.runs.active('api'))!.id);
    const issue = (tx: StoreTx, nodeId: string, attemptId: string) => tx.runs.insertIssued(runId, { nodeId, attemptId, issuedAt: T0, notAfter: null, batch: 0 });
    assert.equal(await store.write((tx) => issue(tx, 'n-a', 'a-1')), true);
    assert.equal(await store.write((tx) => issue(tx, 'n-a', 'a-2')), false, 'a second attempt for the node is not recorded');
    await assert.rejects(store.write((tx) => issue(tx, 'n-b', 'a-1')), /unique/i);
    assert.deepEqual((await store.read((tx) => tx.runs.issued(runId))).map((i) => i.attemptId), ['a-1']);
  });

  test('one receipt per node and seq is a database constraint', async () => {
    const helper = parsePrivateKey(generateKeyPair().privatePem);
    const receipt = (attemptId: string) => {
      const payload = { v: 1 as const, nodeId: 'n-a', app: 'web', attemptId, seq: 7, fromVersion: null, targetVersion: '1.0.0', integrity: null, outcome: 'active' as const, startedAt: T0, updatedAt: T0 };
      return { envelope: signEnvelope(DOMAINS.receipt, payload, helper), payload, counts: false };
    };
    await store.write((tx) => tx.receipts.insert('n-a', receipt('x-1'), T0));
    await assert.rejects(store.write((tx) => tx.receipts.insert('n-a', receipt('x-2'), T0)), /unique|primary/i);
  });

  test('a token is spent once: the second spend changes nothing, however close together', async () => {
    await store.write((tx) => tx.tokens.insert(hashToken('st_t'), { id: 'tok1', createdAt: T0, expiresAt: T0 + 60_000, labels: { env: 'prod' } }));
    const spends = await Promise.all([store.write((tx) => tx.tokens.spend(hashToken('st_t'), T0 + 1, 'n-a')), store.write((tx) => tx.tokens.spend(hashToken('st_t'), T0 + 1, 'n-b'))]);
    assert.deepEqual(spends, [{ env: 'prod' }, null]);
    const [row] = await store.read((tx) => tx.tokens.list());
    assert.deepEqual([row?.usedBy, row?.usedAt], ['n-a', T0 + 1]);
  });

  test("a transaction's now() is the store's clock when it began, the same throughout", async () => {
    clock.t = T0 + 5_000;
    const times = await store.write(async (tx) => {
      const a = await tx.now();
      clock.advance(1_000);
      await pause();
      return [a, await tx.now()];
    });
    assert.deepEqual(times, [T0 + 5_000, T0 + 5_000]);
    assert.equal(await store.read((tx) => tx.now()), T0 + 6_000);
  });

  test('a statement that fails a constraint, caught inside a write, undoes only itself: the rest commits', async () => {
    const op = { role: 'admin' as const, tokenHash: 'h1', createdAt: T0, rotatedAt: null };
    const caught = await store.write(async (tx) => {
      await tx.operators.insert({ name: 'alice', ...op });
      const err = await tx.operators.insert({ name: 'alice', ...op, tokenHash: 'h2' }).catch((e: { code?: string }) => e.code);
      await tx.settings.set('after-the-failure', 'kept');
      return err;
    });
    assert.equal(caught, 'OPERATOR_EXISTS');
    assert.deepEqual(await store.read(async (tx) => [(await tx.operators.list()).map((o) => o.tokenHash), await tx.settings.get('after-the-failure')]), [['h1'], 'kept']);
  });

  test('64-bit integers come back as numbers, up to the largest safe integer', async () => {
    const big = Number.MAX_SAFE_INTEGER;
    await store.write((tx) => tx.audit.insert({ at: big, operator: null, action: 'test.big', target: null, source: null, details: {} }));
    const [row] = await store.read((tx) => tx.audit.page(big, 0, 10));
    assert.equal(row?.at, big);
    assert.equal(typeof row?.id, 'number');
  });

  test('the counts behind the metrics: nodes by freshness, nodes per app and version, runs by status', async () => {
    const app = (name: string, current: string | null) => ({ name, current, previous: null, held: false, blocked: false, supervisor: { state: 'running' as const, attempts: 0, since: null } });
    await store.write((tx) => tx.nodes.recordHeartbeat({ v: 1, nodeId: 'n-a', seq: 1, sentAt: T0, bootId: 'b', agentVersion: '0.1.0', apps: [app('web', '1.0.0'), app('db', null)], receipts: [] }, T0));
    const counts = await store.read(async (tx) => ({
      atT0: await tx.nodes.countByFreshness(T0),
      after: await tx.nodes.countByFreshness(T0 + 1),
      versions: (await tx.nodes.countByAppVersion()).sort((x, y) => (x.app < y.app ? -1 : 1)),
      runs: (await tx.runs.countByStatus()).sort((x, y) => (x.status < y.status ? -1 : 1)),
    }));
    assert.deepEqual(counts.atT0, { fresh: 1, stale: 0, never: 1 }, 'a heartbeat at the bound is fresh; n-b never sent one');
    assert.deepEqual(counts.after, { fresh: 0, stale: 1, never: 1 });
    assert.deepEqual(counts.versions, [{ app: 'db', version: null, nodes: 1 }, { app: 'web', version: '1.0.0', nodes: 1 }]);
    assert.deepEqual(counts.runs, [{ status: 'running', runs: 2 }, { status: 'stopped', runs: 2 }], 'the runs the tests above made');
  });

  test("a heartbeat records the node's clock skew: its sentAt minus the time it was received; null before one", async () => {
    const row = async (id: string) => (await store.read((tx) => tx.nodes.list())).find((n) => n.nodeId === id);
    assert.equal((await row('n-b'))?.clockSkewMs, null);
    await store.write((tx) => tx.nodes.recordHeartbeat({ v: 1, nodeId: 'n-b', seq: 1, sentAt: T0 - 42_000, bootId: 'b', agentVersion: '0.1.0', apps: [], receipts: [] }, T0));
    assert.equal((await row('n-b'))?.clockSkewMs, -42_000);
    await store.write((tx) => tx.nodes.recordHeartbeat({ v: 1, nodeId: 'n-b', seq: 2, sentAt: T0 + 1_500, bootId: 'b', agentVersion: '0.1.0', apps: [], receipts: [] }, T0 + 1_000));
    assert.equal((await row('n-b'))?.clockSkewMs, 500);
    assert.equal((await store.read((tx) => tx.nodes.get('n-b')))?.clockSkewMs, 500);
  });

  test('a clock skew refusal keeps its first time, is written at most once per gap, shows in get, list, the count and its runs, and an accepted heartbeat clears it', async () => {
    const key = generateKeyPair();
    const runId = await store.write(async (tx) => {
      await tx.nodes.insert({ nodeId: 'n-s', hostname: 'n-s', nodePublicKey: key.publicPem, helperPublicKey: key.publicPem, enrolledAt: T0, labels: {} });
      return tx.runs.insert(run({ app: 'skew' }), [{ nodeId: 'n-s', lastHeartbeatAt: null, listedApp: true }]);
    });
    const refuse = (skewMs: number, at: number, nodeId = 'n-s') => store.write((tx) => tx.nodes.recordClockSkewRefusal(nodeId, skewMs, at, 60_000));
    const seen = () =>
      store.read(async (tx) => ({
        get: (await tx.nodes.get('n-s'))?.clockSkewRefused ?? null,
        list: (await tx.nodes.list()).find((n) => n.nodeId === 'n-s')?.clockSkewRefused ?? null,
        count: await tx.nodes.countClockSkewRefused(),
        run: (await tx.runs.nodes(runId))[0]?.clockSkewRefusedSince,
      }));
    const refused = (since: number, lastAt: number, clockSkewMs: number) => ({ get: { since, lastAt, clockSkewMs }, list: { since, lastAt, clockSkewMs }, count: 1, run: since });
    assert.deepEqual(await seen(), { get: null, list: null, count: 0, run: null });

    assert.equal(await refuse(-600_000, T0 + 10_000), true);
    assert.deepEqual(await seen(), refused(T0 + 10_000, T0 + 10_000, -600_000));
    assert.equal(await refuse(-601_000, T0 + 69_999), false, 'within the gap: nothing written');
    assert.deepEqual(await seen(), refused(T0 + 10_000, T0 + 10_000, -600_000));
    assert.equal(await refuse(-602_000, T0 + 70_000), true, 'a gap on: the skew and time updated, the first time kept');
    assert.deepEqual(await seen(), refused(T0 + 10_000, T0 + 70_000, -602_000));
    assert.equal(await refuse(-1, T0 + 200_000, 'n-unknown'), false, 'no such node');

    await store.write((tx) => tx.nodes.recordHeartbeat({ v: 1, nodeId: 'n-s', seq: 1, sentAt: T0 + 80_000, bootId: 'b', agentVersion: '0.1.0', apps: [], receipts: [] }, T0 + 80_000));
    assert.deepEqual(await seen(), { get: null, list: null, count: 0, run: null });
    assert.equal(await refuse(900_000, T0 + 81_000), true, 'refused again right after: a new refusal, not held back by the gap');
    assert.deepEqual(await seen(), refused(T0 + 81_000, T0 + 81_000, 900_000));
  });

  test('runs come a page at a time, newest first, of one app or of every app', async () => {
    const other = await store.write((tx) => tx.runs.insert(run({ app: 'paged-other' }), []));
    await store.write((tx) => tx.runs.end(other, 'stopped', undefined, T0));
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) {
      const id = await store.write((tx) => tx.runs.insert(run({ app: 'paged', version: `1.0.${i}` }), []));
      await store.write((tx) => tx.runs.end(id, 'stopped', undefined, T0));
      ids.push(id);
    }
    const [first, second, third] = ids as [number, number, number];
    const page = (app: string | null, before: number | null, limit: number) => store.read(async (tx) => (await tx.runs.page(app, before, limit)).map((r) => [r.id, r.app, r.version]));
    assert.deepEqual(await page('paged', null, 2), [[third, 'paged', '1.0.2'], [second, 'paged', '1.0.1']]);
    assert.deepEqual(await page('paged', second, 2), [[first, 'paged', '1.0.0']]);
    assert.deepEqual(await page('paged', first, 2), []);
    const every = await page(null, null, 1000);
    assert.deepEqual(every.slice(0, 3).map((r) => r[0]), [third, second, first]);
    assert.ok(every.some((r) => r[0] === other), 'every app');
    assert.deepEqual(every.map((r) => r[0]), [...every.map((r) => r[0] as number)].sort((x, y) => y - x));
  });
});
