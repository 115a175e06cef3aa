// Targets (docs/design.md §18): a standing wish the control plane converges with no operator action.
// Hosts enrolled after the target is set, one relabelled into its selector, one offline through
// a batch and back, and one re-enrolled (re-imaged) each reach the version; at every moment each
// selected node not at the version shows exactly one reason from the closed set, and a node at
// it none. Two targets of one app at the same priority that select one node are refused
// (TARGET_CONFLICT) with nothing written; a selector that matches nobody yet is allowed and says so.
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { BEHIND_REASONS } from '../../src/core/target-plan.js';
import { runOperation, type Operation } from '../../src/control/operations/operation.js';
import { nodesLabel } from '../../src/control/operations/node-ops.js';
import { targetList, targetPause, targetRemove, targetResume, targetSet, targetStatus } from '../../src/control/operations/target-ops.js';
import type { TargetView } from '../../src/control/targets/target-view.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { FakeNode, startControlOn, tickThrough, type Control } from '../helpers/control-harness.js';
import { describeEachBackend } from '../helpers/store-backends.js';

// On both stores: the reconcile loop reads and writes through the store contract only.
describeEachBackend((backend) => {
  let c: Control<ControlStore>;
  const actor = { operator: 'alice', role: 'admin' as const, source: null };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const op = <O = unknown>(o: Operation<any, any>, input: unknown): Promise<O> => runOperation({ store: c.store, actor, artifactsDir: '' }, o, input) as Promise<O>;
  // The audit entries of operators' changes (not the catalog's set-up).
  const changes = async () => (await c.store.read((tx) => tx.audit.page(0, 0, 100))).filter((x) => x.action !== 'release.add');

  beforeEach(async () => {
    c = await startControlOn(backend, { heartbeatSeconds: 30 });
    await c.addRelease('web', '1.1.0');
    await c.addRelease('web', '1.2.0');
  });
  afterEach(() => c.close());

  async function node(hostname: string, labels: Record<string, string>, version = '1.0.0'): Promise<FakeNode> {
    const n = await new FakeNode(c, hostname).enroll(await c.token(3_600_000, labels));
    n.setCurrent('web', version);
    assert.equal((await n.heartbeat()).status, 200);
    return n;
  }

  const status = (name: string) => op<TargetView>(targetStatus, { name });

  // Every selected node at the version has no reason; every other exactly one, from the closed set;
  // the counts agree.
  function assertOneReasonEach(v: TargetView): void {
    for (const n of v.nodes) {
      if (n.state === 'current') {
        assert.equal(n.version, v.version, `${n.hostname} is current only at ${v.version}`);
        assert.equal(n.reason, null, `${n.hostname} is current and has no reason`);
      } else {
        assert.notEqual(n.version, v.version);
        assert.ok(n.reason, `${n.hostname} is behind and has a reason`);
        assert.ok((BEHIND_REASONS as readonly string[]).includes(n.reason.reason), `${n.hostname}: ${n.reason.reason} is in the closed set`);
        assert.ok(n.reason.message.length > 0);
      }
    }
    const sum = Object.values(v.behind).reduce((a, b) => a + b, 0);
    assert.equal(sum, v.counts.behind);
    assert.equal(v.counts.current + v.counts.behind, v.nodes.length);
  }

  const reasonOf = (v: TargetView, n: FakeNode) => v.nodes.find((x) => x.nodeId === n.nodeId)?.reason?.reason ?? null;

  // One round: 10 s pass, each online node heartbeats and answers what it is asked with `active`,
  // the ticker ticks; then the target's status is checked.
  async function round(online: FakeNode[], name = 'prod'): Promise<TargetView> {
    c.clock.advance(10_000);
    for (const n of online) await n.answer('active');
    await tickThrough(c);
    const v = await status(name);
    assertOneReasonEach(v);
    return v;
  }

  test('hosts enrolled after the target, relabelled into it, offline through a batch and back, and re-enrolled each converge with no command', async () => {
    const a = await node('host-a', { env: 'prod' });
    const b = await node('host-b', { env: 'prod' });
    const d = await node('host-d', { env: 'prod' });
    const c0 = await node('host-c', { env: 'dev' });

    const set = await op<TargetView & { notes: string[] }>(targetSet, { name: 'prod', app: 'web', version: '1.1.0', select: 'env=prod', canary: [a.nodeId], batch: '1', bake: '0' });
    assertOneReasonEach(set);
    assert.equal(set.nodes.length, 3, 'host-c is not selected');
    assert.ok(set.run, 'the target started a run');

    // host-d goes offline: it sends nothing while the canary and the first batch go.
    let v = await round([a, b]);
    v = await round([a, b]);
    for (let i = 0; i < 8; i++) v = await round([a, b]);
    assert.equal(reasonOf(v, d), 'offline', 'an offline node says so');

    // After the set: a new host enrolls; host-c is relabelled into the selector.
    const e = await node('host-e', { env: 'prod' });
    await op(nodesLabel, { args: [c0.nodeId, 'env=prod'] });
    v = await round([a, b, e, c0]);
    assert.ok(v.nodes.some((n) => n.nodeId === c0.nodeId), 'host-c is selected once relabelled');

    // host-d comes back; host-a (the canary, at 1.1.0) is re-imaged: it enrolls again as a new
    // node at 1.0.0. Its old record stays (at 1.1.0, offline) until `nodes remove`.
    assert.equal(a.apps[0]?.current, '1.1.0');
    const a2 = await node('host-a', { env: 'prod' });
    for (let i = 0; i < 12; i++) v = await round([a2, b, e, c0, d]);

    assert.equal(v.status, 'converged', JSON.stringify(v.nodes.filter((n) => n.state !== 'current')));
    for (const n of [a2, b, e, c0, d]) assert.equal(v.nodes.find((x) => x.nodeId === n.nodeId)?.version, '1.1.0', `${n.hostname} runs 1.1.0`);
    // No operator action after the set but the relabel: every run was the target's own.
    const audit = await changes();
    assert.deepEqual(audit.map((x) => x.action), ['target.set', 'nodes.label']);
  });

  test('a selector that matches no node is allowed: the target says it waits, and converges the first node that matches', async () => {
    const out = await op<TargetView & { notes: string[] }>(targetSet, { name: 'later', app: 'web', version: '1.1.0', select: 'env=later', canaries: '0', bake: '0' });
    assert.equal(out.nodes.length, 0);
    assert.match(out.notes.join('\n'), /matches no enrolled node now; the target waits/);
    assert.equal(out.status, 'waiting');
    // The same selector at the same priority overlaps whatever is enrolled: refused.
    await assert.rejects(op(targetSet, { name: 'later-2', app: 'web', version: '1.2.0', select: 'env=later' }), { code: 'TARGET_CONFLICT' });
    assert.equal(out.run, null);
    const n = await node('host-n', { env: 'later' });
    let v = await round([n], 'later');
    for (let i = 0; i < 3; i++) v = await round([n], 'later');
    assert.equal(v.status, 'converged');
  });

  test('two targets of one app at the same priority that select one node are refused TARGET_CONFLICT, with nothing written; a higher priority wins the node', async () => {
    const a = await node('host-a', { env: 'prod', tier: 'web' });
    await node('host-b', { env: 'prod' });
    await op(targetSet, { name: 'prod', app: 'web', version: '1.1.0', select: 'env=prod', bake: '0' });
    const before = await c.store.read(async (tx) => ({ targets: await tx.targets.list(), runs: await tx.runs.page(null, null, 100), audit: await tx.audit.page(0, 0, 100) }));
    await assert.rejects(op(targetSet, { name: 'web-tier', app: 'web', version: '1.2.0', select: 'tier=web', bake: '0' }), (err: { code?: string; message?: string }) => {
      assert.equal(err.code, 'TARGET_CONFLICT');
      assert.match(err.message ?? '', /target prod .* also selects/);
      return true;
    });
    const after = await c.store.read(async (tx) => ({ targets: await tx.targets.list(), runs: await tx.runs.page(null, null, 100), audit: await tx.audit.page(0, 0, 100) }));
    assert.deepEqual(after, before, 'a refused set changes nothing');

    // At a higher priority it is allowed, and takes host-a from the other target.
    const hi = await op<TargetView>(targetSet, { name: 'web-tier', app: 'web', version: '1.2.0', select: 'tier=web', priority: '10', bake: '0' });
    assert.deepEqual(hi.nodes.map((n) => n.nodeId), [a.nodeId]);
    const prod = await status('prod');
    assert.ok(!prod.nodes.some((n) => n.nodeId === a.nodeId), 'the lower-priority target no longer selects host-a');
    // host-a is still the first target's run's (pending or in flight there): the second target
    // waits for that run to leave it or decide, and says so.
    assert.ok(['waiting-batch', 'in-progress'].includes(reasonOf(hi, a) ?? ''), String(reasonOf(hi, a)));
    assert.match(hi.nodes.find((n) => n.nodeId === a.nodeId)!.reason!.message, /target prod/);
  });

  test('a dry run of set writes nothing and shows the nodes and the run it would start', async () => {
    await node('host-a', { env: 'prod' });
    await node('host-b', { env: 'prod' });
    const before = await c.store.read(async (tx) => ({ targets: await tx.targets.list(), runs: await tx.runs.page(null, null, 100), audit: await tx.audit.page(0, 0, 100) }));
    const d = await op<{ dryRun: true; target: TargetView; run: { batches: unknown[] } | null }>(targetSet, { name: 'prod', app: 'web', version: '1.1.0', select: 'env=prod', batch: '1', dryRun: true });
    assert.equal(d.dryRun, true);
    assert.equal(d.target.nodes.length, 2);
    assert.ok(d.run && d.run.batches.length >= 2, 'canary, then a batch');
    const after = await c.store.read(async (tx) => ({ targets: await tx.targets.list(), runs: await tx.runs.page(null, null, 100), audit: await tx.audit.page(0, 0, 100) }));
    assert.deepEqual(after, before);
  });

  test('pause shows every node behind as paused, resume goes on, remove stops the run; each is audited', async () => {
    const a = await node('host-a', { env: 'prod' });
    const b = await node('host-b', { env: 'prod' });
    await op(targetSet, { name: 'prod', app: 'web', version: '1.1.0', select: 'env=prod', canaries: '0', batch: '1', bake: '0' });
    const p = await op<TargetView>(targetPause, { name: 'prod' });
    assert.equal(p.status, 'paused');
    let v = await round([a, b]);
    assert.ok(v.nodes.filter((n) => n.state === 'behind').every((n) => n.reason?.reason === 'paused' || n.reason?.reason === 'in-progress'), JSON.stringify(v.nodes));
    await op(targetResume, { name: 'prod' });
    for (let i = 0; i < 4; i++) v = await round([a, b]);
    assert.equal(v.status, 'converged');
    const list = await op<{ targets: Array<{ name: string; status: string }> }>(targetList, {});
    assert.deepEqual(list.targets.map((t) => [t.name, t.status]), [['prod', 'converged']]);
    const r = await op<{ removed: string }>(targetRemove, { name: 'prod' });
    assert.equal(r.removed, 'prod');
    await assert.rejects(status('prod'), { code: 'NOT_FOUND' });
    const audit = await changes();
    assert.deepEqual(audit.map((x) => [x.action, x.operator, x.target]), [['target.set', 'alice', 'prod'], ['target.pause', 'alice', 'prod'], ['target.resume', 'alice', 'prod'], ['target.remove', 'alice', 'prod']]);
  });

  test("a node its host holds shows held and is not issued; once the hold is lifted it converges with no command", async () => {
    const a = await node('host-a', { env: 'prod' });
    const b = await node('host-b', { env: 'prod' });
    b.apps = b.apps.map((x) => ({ ...x, held: true }));
    await b.heartbeat();
    await op(targetSet, { name: 'prod', app: 'web', version: '1.1.0', select: 'env=prod', canaries: '0', batch: '100%', bake: '0' });
    let v = await round([a, b]);
    v = await round([a, b]);
    assert.equal(reasonOf(v, b), 'held');
    assert.equal(b.apps[0]?.current, '1.0.0', 'a held node is not asked');
    b.apps = b.apps.map((x) => ({ ...x, held: false }));
    for (let i = 0; i < 4; i++) v = await round([a, b]);
    assert.equal(v.status, 'converged');
    assert.deepEqual((await changes()).map((x) => x.action), ['target.set']);
  });
  test('a halted target shows halted on every node it would issue; resume goes on without the node that rolled back', async () => {
    const a = await node('host-a', { env: 'prod' });
    const b = await node('host-b', { env: 'prod' });
    const d = await node('host-d', { env: 'prod' });
    await op(targetSet, { name: 'prod', app: 'web', version: '1.1.0', select: 'env=prod', canary: [a.nodeId], batch: '1', bake: '0' });
    c.clock.advance(10_000);
    await a.answer('rolled-back', 'REPLACEMENT_UNHEALTHY');
    a.setCurrent('web', '1.0.0');
    await tickThrough(c);
    let v = await status('prod');
    assertOneReasonEach(v);
    assert.equal(v.status, 'halted');
    assert.equal(reasonOf(v, a), 'reverted');
    assert.deepEqual([reasonOf(v, b), reasonOf(v, d)], ['halted', 'halted']);
    await op(targetResume, { name: 'prod' });
    for (let i = 0; i < 6; i++) v = await round([a, b, d]);
    assert.deepEqual([reasonOf(v, a), reasonOf(v, b), reasonOf(v, d)], ['reverted', null, null], JSON.stringify(v.nodes));
    assert.equal(v.counts.current, 2);
  });
});
