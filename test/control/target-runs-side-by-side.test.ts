// Targets of one app over different nodes converge side by side (docs/design.md §18): each target's
// run goes beside the others', over nodes none of them may still issue or has in flight, so that
// late nodes of five region targets of one app do not queue behind each other's runs. A one-shot
// run still goes alone: refused while target runs go, and holding back targets' next runs while it
// goes. A node relabelled from one target to another while its attempt is in flight is the first
// run's until it decides. `rollout pause|stop APP` acts on every running run of the app, a target's
// with its target.
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { runOperation, type Operation } from '../../src/control/operations/operation.js';
import { readFleetSnapshot } from '../../src/control/metrics/fleet-snapshot.js';
import { nodesLabel } from '../../src/control/operations/node-ops.js';
import { rolloutPause, rolloutStart, rolloutStop } from '../../src/control/operations/rollout-ops.js';
import { targetSet, targetStatus } from '../../src/control/operations/target-ops.js';
import type { TargetView } from '../../src/control/targets/target-view.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { FakeNode, startControlOn, tickThrough, type Control } from '../helpers/control-harness.js';
import { describeEachBackend } from '../helpers/store-backends.js';

describeEachBackend((backend) => {
  let c: Control<ControlStore>;
  const actor = { operator: 'alice', role: 'admin' as const, source: null };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const op = <O = unknown>(o: Operation<any, any>, input: unknown): Promise<O> => runOperation({ store: c.store, actor, artifactsDir: '' }, o, input) as Promise<O>;

  beforeEach(async () => {
    c = await startControlOn(backend, { heartbeatSeconds: 30 });
    await c.addRelease('web', '1.1.0');
  });
  afterEach(() => c.close());

  async function node(hostname: string, labels: Record<string, string>): Promise<FakeNode> {
    const n = await new FakeNode(c, hostname).enroll(await c.token(3_600_000, labels));
    n.setCurrent('web', '1.0.0');
    assert.equal((await n.heartbeat()).status, 200);
    return n;
  }
  const running = () => c.store.read((tx) => tx.runs.runningOf('web'));
  const status = (name: string) => op<TargetView>(targetStatus, { name });
  const policy = { app: 'web', version: '1.1.0', canaries: '0', batch: '10', bake: '0' };

  test('two targets of one app start their runs in one tick, side by side, and both converge', async () => {
    const eu = await node('eu-1', { region: 'eu' });
    const us = await node('us-1', { region: 'us' });
    await op(targetSet, { name: 'eu', select: 'region=eu', ...policy });
    await op(targetSet, { name: 'us', select: 'region=us', ...policy });
    await tickThrough(c);
    const runs = await running();
    assert.equal(runs.length, 2, 'both runs go at once');
    // The metrics add the two runs' nodes up under the app: one series per app and state.
    const snap = await c.store.read(readFleetSnapshot);
    assert.deepEqual(snap.runNodes, [{ app: 'web', states: { issued: 2 } }]);
    for (const n of [eu, us]) {
      const d = await n.answer('active');
      assert.equal(d.length, 1, `${n.hostname} was issued`);
    }
    await tickThrough(c);
    assert.equal((await status('eu')).status, 'converged');
    assert.equal((await status('us')).status, 'converged');
  });

  test('a one-shot run goes alone: refused while a target run goes, and the targets wait for it', async () => {
    const eu = await node('eu-1', { region: 'eu' });
    await node('us-1', { region: 'us' });
    await op(targetSet, { name: 'eu', select: 'region=eu', ...policy });
    await tickThrough(c);
    await assert.rejects(op(rolloutStart, { app: 'web', version: '1.1.0', select: 'region=us' }), (err: { code?: string; message?: string }) => err.code === 'BUSY' && /target eu/.test(err.message ?? ''));
    await eu.answer('active');
    await tickThrough(c);
    assert.equal((await running()).length, 0);
    // The one-shot run first: a target set now waits for it.
    await op(rolloutStart, { app: 'web', version: '1.1.0', select: 'region=us', canaries: '0', batch: '1', bake: '0' });
    const oneShot = (await running())[0]!;
    await c.addRelease('web', '1.2.0');
    await op(targetSet, { name: 'us', select: 'region=us', app: 'web', version: '1.2.0', canaries: '0', batch: '10', bake: '0' });
    await tickThrough(c);
    assert.deepEqual((await running()).map((r) => r.id), [oneShot.id], 'the target started no run beside it');
    // Its node is the one-shot run's (issued there at once), and the target waits for that run.
    const v = await status('us');
    assert.equal(v.nodes[0]?.reason?.reason, 'in-progress');
    assert.match(v.nodes[0]!.reason!.message, new RegExp(`rollout ${oneShot.id} of web 1\\.1\\.0 has it in flight`));
  });

  test('a node relabelled from one target to another while its attempt is in flight is the first run\'s until it decides', async () => {
    const n = await node('eu-1', { region: 'eu' });
    await node('us-1', { region: 'us' });
    await op(targetSet, { name: 'eu', select: 'region=eu', ...policy });
    await tickThrough(c);
    const first = await n.heartbeat();
    assert.equal(first.body.desired.length, 1, 'issued by target eu');
    await op(nodesLabel, { args: [n.nodeId, 'region=us'] });
    await op(targetSet, { name: 'us', select: 'region=us', ...policy });
    await tickThrough(c);
    const v = await status('us');
    const mine = v.nodes.find((x) => x.nodeId === n.nodeId)!;
    assert.equal(mine.reason?.reason, 'in-progress');
    assert.match(mine.reason!.message, /target eu.*in flight/);
    // Only target eu's attempt is in flight on the node: one entry.
    const again = await n.heartbeat();
    assert.equal(again.body.desired.length, 1);
    assert.equal(again.body.desired[0].attemptId, first.body.desired[0].attemptId);
  });

  test('rollout pause and stop of the app act on every running run; a target\'s pause holds through the next tick', async () => {
    await node('eu-1', { region: 'eu' });
    await node('eu-2', { region: 'eu' });
    await node('us-1', { region: 'us' });
    await node('us-2', { region: 'us' });
    const one = { ...policy, batch: '1' };
    await op(targetSet, { name: 'eu', select: 'region=eu', ...one });
    await op(targetSet, { name: 'us', select: 'region=us', ...one });
    await tickThrough(c);
    assert.equal((await running()).length, 2);
    await op(rolloutPause, { app: 'web' });
    await tickThrough(c);
    assert.deepEqual((await running()).map((r) => r.paused), [true, true], 'the reconcile does not resume them');
    assert.equal((await status('eu')).paused, true);
    await op(rolloutStop, { app: 'web' });
    assert.equal((await running()).length, 0);
  });
});
