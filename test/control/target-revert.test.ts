// `target revert` (docs/design.md §18): the nodes the target's last run changed go back to the version
// each ran before through the helper's rollback (a desired entry with `rollback: true`, sent only
// to an agent that offers it), in a run of the target's own without canaries or bake; the target
// is paused and each reverted node says `reverted`. Nothing to revert is refused.
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { DESIRED_FIELDS_HEADER, HEARTBEAT_PATH } from '../../src/core/control-api.js';
import { runOperation, type Operation } from '../../src/control/operations/operation.js';
import { targetRevert, targetSet, targetStatus } from '../../src/control/operations/target-ops.js';
import type { TargetView } from '../../src/control/targets/target-view.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { FakeNode, startControlOn, tickThrough, type Control } from '../helpers/control-harness.js';
import { describeEachBackend } from '../helpers/store-backends.js';

describeEachBackend((backend) => {
  let c: Control<ControlStore>;
  const actor = { operator: 'alice', role: 'operator' as const, source: null };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const op = <O = any>(o: Operation<any, any>, input: unknown): Promise<O> => runOperation({ store: c.store, actor, artifactsDir: '' }, o, input) as Promise<O>;

  beforeEach(async () => {
    c = await startControlOn(backend, { heartbeatSeconds: 30 });
    await c.addRelease('web', '1.0.0');
    await c.addRelease('web', '1.1.0');
  });
  afterEach(() => c.close());

  async function node(hostname: string): Promise<FakeNode> {
    const n = await new FakeNode(c, hostname).enroll(await c.token(3_600_000, { env: 'prod' }));
    n.setCurrent('web', '1.0.0');
    assert.equal((await n.heartbeat()).status, 200);
    return n;
  }

  // A heartbeat as an agent that offers rollback entries sends it; the desired entries answered.
  async function beatWithRollback(n: FakeNode, receipts: unknown[] = []): Promise<Array<{ app: string; version: string; attemptId: string; rollback?: true }>> {
    const res = await fetch(`${c.server.url}${HEARTBEAT_PATH}`, { method: 'POST', body: n.body({ receipts }), headers: { 'content-type': 'application/json', [DESIRED_FIELDS_HEADER]: 'rollback' } });
    assert.equal(res.status, 200);
    return ((await res.json()) as { desired: Array<{ app: string; version: string; attemptId: string; rollback?: true }> }).desired;
  }

  test('target revert takes the nodes its last run changed back through the helper rollback, paused, each reverted', async () => {
    const a = await node('host-a');
    const b = await node('host-b');
    await op(targetSet, { name: 'prod', app: 'web', version: '1.1.0', select: 'env=prod', canaries: '0', batch: '1', bake: '0' });
    for (let i = 0; i < 4; i++) {
      c.clock.advance(10_000);
      for (const n of [a, b]) await n.answer('active');
      await tickThrough(c);
    }
    assert.equal((await op<TargetView>(targetStatus, { name: 'prod' })).status, 'converged');

    const r = await op<TargetView & { revertRun: number; to: string; revertedNodes: string[] }>(targetRevert, { name: 'prod' });
    assert.equal(r.to, '1.0.0');
    assert.deepEqual([...r.revertedNodes].sort(), [a.nodeId, b.nodeId].sort());
    assert.equal(r.status, 'paused', 'the target does not take them forward again');
    const run = await c.store.read((tx) => tx.runs.get(r.revertRun));
    assert.deepEqual([run?.version, run?.canaries, run?.bakeMs, run?.batch], ['1.0.0', 0, 0, '1'], 'in the target batches, without canaries or bake');

    // An agent that does not offer rollback entries is not sent one.
    const plain = await a.heartbeat();
    assert.deepEqual(plain.body.desired, []);

    // One that does gets it: the version it ran before, as a rollback.
    for (let i = 0; i < 4; i++) {
      c.clock.advance(10_000);
      for (const n of [a, b]) {
        const desired = await beatWithRollback(n);
        for (const d of desired) {
          assert.deepEqual([d.version, d.rollback], ['1.0.0', true]);
          const receipt = n.receipt({ app: 'web', attemptId: d.attemptId, fromVersion: '1.1.0', targetVersion: '1.0.0', outcome: 'active' });
          n.setCurrent('web', '1.0.0');
          await beatWithRollback(n, [receipt]);
        }
      }
      await tickThrough(c);
    }
    const v = await op<TargetView>(targetStatus, { name: 'prod' });
    assert.deepEqual(v.nodes.map((n) => [n.version, n.reason?.reason]), [['1.0.0', 'reverted'], ['1.0.0', 'reverted']]);
    assert.equal((await c.store.read((tx) => tx.runs.get(r.revertRun)))?.status, 'succeeded');
    const audit = (await c.store.read((tx) => tx.audit.page(0, 0, 100))).filter((x) => x.action === 'target.revert');
    assert.deepEqual(audit.map((x) => [x.operator, x.target, x.details.to, x.details.runId]), [['alice', 'prod', '1.0.0', r.revertRun]]);

    // Nothing left to revert.
    await assert.rejects(op(targetRevert, { name: 'prod' }), { code: 'NOT_FOUND' });
  });

  test('nodes that ran different versions before go back each to its own, in revert runs side by side; one that had none is left out', async () => {
    await c.addRelease('web', '0.9.0');
    const a = await node('host-a');
    const b = await node('host-b');
    const fresh = await node('host-fresh');
    b.setCurrent('web', '0.9.0');
    fresh.setCurrent('web', null);
    for (const n of [b, fresh]) assert.equal((await n.heartbeat()).status, 200);
    await op(targetSet, { name: 'prod', app: 'web', version: '1.1.0', select: 'env=prod', canaries: '0', batch: '3', bake: '0' });
    for (let i = 0; i < 4; i++) {
      c.clock.advance(10_000);
      for (const n of [a, b, fresh]) await n.answer('active', undefined, { fromVersion: n === a ? '1.0.0' : n === b ? '0.9.0' : null });
      await tickThrough(c);
    }
    assert.equal((await op<TargetView>(targetStatus, { name: 'prod' })).status, 'converged');

    const r = await op<TargetView & { reverts: Array<{ runId: number; to: string; nodes: string[] }>; leftOut: string[]; revertRun: number }>(targetRevert, { name: 'prod' });
    assert.deepEqual(r.reverts.map((x) => [x.to, x.nodes]).sort(), [['0.9.0', [b.nodeId]], ['1.0.0', [a.nodeId]]]);
    assert.deepEqual(r.leftOut, [fresh.nodeId], 'it installed web first: nothing to go back to');
    assert.equal(r.revertRun, r.reverts[0]!.runId);
    const runs = await c.store.read((tx) => tx.runs.runningOf('web'));
    assert.equal(runs.length, 2, 'both revert runs go at once');
    for (let i = 0; i < 4; i++) {
      c.clock.advance(10_000);
      for (const n of [a, b]) {
        for (const d of await beatWithRollback(n)) {
          const to = n === a ? '1.0.0' : '0.9.0';
          assert.deepEqual([d.version, d.rollback], [to, true]);
          const receipt = n.receipt({ app: 'web', attemptId: d.attemptId, fromVersion: '1.1.0', targetVersion: to, outcome: 'active' });
          n.setCurrent('web', to);
          await beatWithRollback(n, [receipt]);
        }
      }
      await tickThrough(c);
    }
    const v = await op<TargetView>(targetStatus, { name: 'prod' });
    assert.deepEqual(v.nodes.map((n) => [n.hostname, n.version, n.reason?.reason ?? null]).sort(), [['host-a', '1.0.0', 'reverted'], ['host-b', '0.9.0', 'reverted'], ['host-fresh', '1.1.0', null]]);
    for (const x of r.reverts) assert.equal((await c.store.read((tx) => tx.runs.get(x.runId)))?.status, 'succeeded');
    const audit = (await c.store.read((tx) => tx.audit.page(0, 0, 100))).filter((x) => x.action === 'target.revert');
    assert.equal(audit.length, 2, 'one audit entry per revert run');
  });

  test('a version before that is not in the catalog refuses the whole revert; nothing is started', async () => {
    const a = await node('host-a');
    const b = await node('host-b');
    b.setCurrent('web', '0.8.0');
    assert.equal((await b.heartbeat()).status, 200);
    await op(targetSet, { name: 'prod', app: 'web', version: '1.1.0', select: 'env=prod', canaries: '0', batch: '2', bake: '0' });
    for (let i = 0; i < 4; i++) {
      c.clock.advance(10_000);
      for (const n of [a, b]) await n.answer('active', undefined, { fromVersion: n === a ? '1.0.0' : '0.8.0' });
      await tickThrough(c);
    }
    await assert.rejects(op(targetRevert, { name: 'prod' }), (err: { code?: string; message?: string }) => err.code === 'NOT_FOUND' && /0\.8\.0.*not in the catalog/.test(err.message ?? ''));
    assert.deepEqual(await c.store.read((tx) => tx.runs.runningOf('web')), []);
    assert.equal((await op<TargetView>(targetStatus, { name: 'prod' })).status, 'converged', 'not paused');
  });

  test('a revert of a target that started no run is refused NOT_FOUND, and of no such target too', async () => {
    await op(targetSet, { name: 'empty', app: 'web', version: '1.1.0', select: 'env=none' });
    await assert.rejects(op(targetRevert, { name: 'empty' }), (err: { code?: string; message?: string }) => err.code === 'NOT_FOUND' && /started no run/.test(err.message ?? ''));
    await assert.rejects(op(targetRevert, { name: 'nope' }), { code: 'NOT_FOUND' });
  });
});
