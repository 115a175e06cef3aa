// Run and target events are queued for the hooks that name them in the transaction of the change they
// tell of (docs/design.md §19): a run started, paused, resumed, halted, succeeded or stopped; a target
// set, converged, and behind again after it had converged. A transaction that rolls back queues
// nothing; a hook is queued only the events it names; each event is a CloudEvent 1.0 with its id.
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { emitEvent } from '../../src/control/hooks/emit-event.js';
import { emitRunEvent } from '../../src/control/hooks/run-events.js';
import { judgeDueSteps } from '../../src/control/rollouts/judge-steps.js';
import { runOperation, type Operation } from '../../src/control/operations/operation.js';
import { rolloutPause, rolloutResume, rolloutStart, rolloutStop } from '../../src/control/operations/rollout-ops.js';
import { targetSet, targetStatus } from '../../src/control/operations/target-ops.js';
import type { ControlStore } from '../../src/control/store/store.js';
import type { TargetView } from '../../src/control/targets/target-view.js';
import { FakeNode, startControlOn, tickThrough, type Control } from '../helpers/control-harness.js';
import { describeEachBackend } from '../helpers/store-backends.js';

interface Event {
  specversion: string;
  id: string;
  source: string;
  type: string;
  time: string;
  subject: string;
  datacontenttype: string;
  data: any;
}

describeEachBackend((backend) => {
  let c: Control<ControlStore>;
  const actor = { operator: 'alice', role: 'admin' as const, source: null };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const op = <O = unknown>(o: Operation<any, any>, input: unknown): Promise<O> => runOperation({ store: c.store, actor, artifactsDir: '' }, o, input) as Promise<O>;
  // The events queued for a hook, oldest first.
  const queued = async (hook = 'all'): Promise<Event[]> => (await c.store.read((tx) => tx.hooks.deliveries(hook, 1000))).reverse().map((d) => JSON.parse(d.body) as Event);
  const types = async (hook = 'all') => (await queued(hook)).map((e) => e.type.replace('dev.steward.', ''));

  beforeEach(async () => {
    c = await startControlOn(backend, { heartbeatSeconds: 30 });
    await c.addRelease('web', '1.1.0');
    await c.store.write(async (tx) => {
      await tx.hooks.insert({ name: 'all', url: 'https://hooks.example/all', events: ['run.started', 'run.paused', 'run.resumed', 'run.halted', 'run.succeeded', 'run.stopped', 'target.set', 'target.converged', 'target.behind'], secret: 'x'.repeat(32), createdAt: 0, createdBy: null });
      await tx.hooks.insert({ name: 'halts', url: 'https://hooks.example/halts', events: ['run.halted'], secret: 'y'.repeat(32), createdAt: 0, createdBy: null });
    });
  });
  afterEach(() => c.close());

  async function node(hostname: string, labels: Record<string, string>): Promise<FakeNode> {
    const n = await new FakeNode(c, hostname).enroll(await c.token(3_600_000, labels));
    n.setCurrent('web', '1.0.0');
    assert.equal((await n.heartbeat()).status, 200);
    return n;
  }

  test('a rollout started, paused, resumed and stopped queues run.started, run.paused, run.resumed, run.stopped, each a CloudEvent with its own id', async () => {
    await node('host-a', {});
    await node('host-b', {});
    await op(rolloutStart, { app: 'web', version: '1.1.0', canaries: '0', batch: '1', bake: '0' });
    await op(rolloutPause, { app: 'web' });
    await op(rolloutPause, { app: 'web' });
    await op(rolloutResume, { app: 'web' });
    await op(rolloutStop, { app: 'web' });
    assert.deepEqual(await types(), ['run.started', 'run.paused', 'run.resumed', 'run.stopped'], 'a second pause changes nothing and tells nothing');
    const events = await queued();
    assert.equal(new Set(events.map((e) => e.id)).size, 4);
    for (const e of events) {
      assert.deepEqual([e.specversion, e.source, e.datacontenttype, e.subject], ['1.0', 'steward-control', 'application/json', `run/${e.data.run.id}`]);
      assert.match(e.id, /^[0-9a-f-]{36}$/);
      assert.equal(e.time, new Date(c.clock.now()).toISOString());
      assert.deepEqual([e.data.run.app, e.data.run.version], ['web', '1.1.0']);
    }
    assert.equal(events[3]!.data.run.status, 'stopped');
    assert.deepEqual(await types('halts'), [], 'a hook is queued only the events it names');
    // A change the run's row does not hold (a pause by the analysis) comes with its reason.
    const runId = events[0]!.data.run.id as number;
    await c.store.write((tx) => emitRunEvent(tx, 'run.paused', runId, { code: 'ANALYSIS_INCONCLUSIVE', message: 'too few requests' }));
    assert.deepEqual((await queued()).at(-1)!.data.reason, { code: 'ANALYSIS_INCONCLUSIVE', message: 'too few requests' });
    assert.equal('reason' in events[1]!.data, false, 'none otherwise');
  });

  test("a canary that rolls back halts the run: run.halted carries the halt's code, node and message, for both hooks with one id", async () => {
    const a = await node('host-a', {});
    await node('host-b', {});
    await op(rolloutStart, { app: 'web', version: '1.1.0', canary: [a.nodeId], batch: '1', bake: '0' });
    c.clock.advance(10_000);
    await a.answer('rolled-back', 'REPLACEMENT_UNHEALTHY');
    await tickThrough(c);
    const [halt] = (await queued('halts'));
    assert.equal(halt?.type, 'dev.steward.run.halted');
    assert.equal(halt.data.run.status, 'halted');
    assert.equal(halt.data.run.halt.nodeId, a.nodeId);
    assert.ok(halt.data.run.halt.code, JSON.stringify(halt.data));
    assert.ok(halt.data.run.halt.message.length > 0);
    assert.deepEqual((await queued('all')).filter((e) => e.type === 'dev.steward.run.halted').map((e) => e.id), [halt.id], 'one event, one id, queued for each hook');
  });

  test('a target set converges (target.set, run.started, run.succeeded, target.converged), then a node joins behind it (target.behind) and it converges again', async () => {
    const a = await node('host-a', { env: 'prod' });
    const b = await node('host-b', { env: 'prod' });
    await op(targetSet, { name: 'prod', app: 'web', version: '1.1.0', select: 'env=prod', canaries: '0', batch: '100%', bake: '0' });
    const round = async (nodes: FakeNode[]) => {
      c.clock.advance(10_000);
      for (const n of nodes) await n.answer('active');
      await tickThrough(c);
      return (await op<TargetView>(targetStatus, { name: 'prod' })).status;
    };
    let status = '';
    for (let i = 0; i < 4 && status !== 'converged'; i++) status = await round([a, b]);
    assert.equal(status, 'converged');
    await tickThrough(c);
    // Each once, however many ticks; the target may read converged (every node at the version) in
    // the tick before its run's end is recorded.
    const first = await types();
    assert.deepEqual(first.slice(0, 2), ['target.set', 'run.started']);
    assert.deepEqual(first.slice(2).sort(), ['run.succeeded', 'target.converged']);
    const converged = (await queued()).find((e) => e.type === 'dev.steward.target.converged')!;
    assert.deepEqual([converged.subject, converged.data.target.version, converged.data.counts], ['target/prod', '1.1.0', { selected: 2, current: 2, behind: 0 }]);

    const late = await node('host-late', { env: 'prod' });
    await tickThrough(c);
    const behind = (await queued()).filter((e) => e.type === 'dev.steward.target.behind');
    assert.equal(behind.length, 1, (await types()).join(','));
    assert.deepEqual(behind[0]!.data.behind.map((n: { hostname: string }) => n.hostname), ['host-late']);
    for (let i = 0; i < 4 && status !== 'converged'; i++) status = await round([a, b, late]);
    for (let i = 0; i < 4; i++) status = await round([a, b, late]);
    assert.equal(status, 'converged');
    // The step that sees it behind starts the run for it, in the same transaction; the target may
    // read converged (every node at the version) in the tick before the run's end is recorded.
    const after = (await types()).slice(4);
    assert.deepEqual(after.slice(0, 2), ['run.started', 'target.behind']);
    assert.deepEqual(after.slice(2).sort(), ['run.succeeded', 'target.converged']);
  });

  test('an enforced analysis that is inconclusive queues run.paused with ANALYSIS_INCONCLUSIVE; the resume that answers it, run.resumed', async () => {
    const a = await node('host-a', {});
    const b = await node('host-b', {});
    await op(rolloutStart, { app: 'web', version: '1.1.0', canary: [a.nodeId], batch: '1', bake: '0', analysis: 'enforce', analysisWindow: '5m' });
    const run = (await c.store.read((tx) => tx.runs.active('web')))!;
    const now = c.clock.now();
    const judge = async () => ({ verdict: 'inconclusive' as const, from: new Date(now - 300_000).toISOString(), to: new Date(now).toISOString(), signals: [], summary: 'error-ratio: 3 requests on the canaries, fewer than 100' });
    assert.equal(await judgeDueSteps(c.store, run, [{ step: 0, from: now - 300_000, to: now, canary: [a.nodeId], baseline: [b.nodeId] }], judge), 1);
    const paused = (await queued()).at(-1)!;
    assert.deepEqual([paused.type, paused.data.reason], ['dev.steward.run.paused', { code: 'ANALYSIS_INCONCLUSIVE', message: 'error-ratio: 3 requests on the canaries, fewer than 100' }]);
    assert.equal(paused.data.run.paused, false, "the run's own flag: paused by its analysis, not by an operator");
    await op(rolloutResume, { app: 'web' });
    const resumed = (await queued()).at(-1)!;
    assert.deepEqual([resumed.type, resumed.data.reason.code], ['dev.steward.run.resumed', 'ANALYSIS_INCONCLUSIVE']);
    assert.match(resumed.data.reason.message, /^1 inconclusive judgement answered by alice/);
    assert.deepEqual(await types(), ['run.started', 'run.paused', 'run.resumed']);
  });

  test('an event queued in a transaction that rolls back is never queued: no event without its change', async () => {
    await assert.rejects(
      c.store.write(async (tx) => {
        assert.ok(await emitEvent(tx, 'run.halted', 'run/999', { run: { id: 999 } }));
        throw new Error('the change failed');
      }),
      /the change failed/,
    );
    assert.deepEqual(await queued('halts'), []);
    assert.equal(await c.store.write((tx) => emitEvent(tx, 'target.set', 'target/x', {})).then((id) => typeof id), 'string');
    assert.equal(await c.store.write(async (tx) => { await tx.hooks.remove('all'); return emitEvent(tx, 'target.set', 'target/x', {}); }), null, 'no hook names it: nothing queued');
  });
});
