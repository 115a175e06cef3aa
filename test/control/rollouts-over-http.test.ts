// Rollouts end to end through the HTTP server: fake nodes heartbeat, receive `desired`, and
// answer with helper-signed receipts; the fake clock drives timeouts without sleeping. On both
// store backends: heartbeats, their savepoints and the group commit go through the contract.
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey } from 'node:crypto';
import { manifestPayloadSchema } from '../../src/core/release-schemas.js';
import { DOMAINS, keyIdOf, openEnvelope } from '../../src/platform/keys.js';
import { describeRun, type RunStatusView } from '../../src/control/rollouts/run-status.js';
import { dryRunRetry as dryRetry, dryRunStart as dryStart, retryRun as retry, startRun as start, stopRun, type RunOptions } from '../../src/control/rollouts/start-run.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { enrollNodes, FakeNode, MINUTE, startControlOn, type Control as AnyControl } from '../helpers/control-harness.js';
import { describeEachBackend } from '../helpers/store-backends.js';

type Control = AnyControl<ControlStore>;

// Every run of this file without a bake, and (unless named) with the lowest nodeId as its
// canary, as the fleet() helper sorts the nodes: the canary order is seeded otherwise.
const lowest = async (store: ControlStore) => (await store.read((tx) => tx.nodes.list()))[0]!.nodeId;
const startRun = async (store: ControlStore, app: string, version: string, o: RunOptions) => start(store, app, version, { bakeMs: 0, canary: [await lowest(store)], ...o });
const retryRun = (store: ControlStore, app: string, o: RunOptions) => retry(store, app, { bakeMs: 0, ...o });
const dryRunStart = async (store: ControlStore, app: string, version: string, o: RunOptions) => dryStart(store, app, version, { bakeMs: 0, canary: [await lowest(store)], ...o });
const dryRunRetry = (store: ControlStore, app: string, o: RunOptions) => dryRetry(store, app, { bakeMs: 0, ...o });

describeEachBackend((backend) => {
  let c: Control | null = null;
  afterEach(async () => {
    await c?.close();
    c = null;
  });

  // A control plane with `count` enrolled nodes reporting web 1.0.0, sorted by nodeId, and web 1.1.0 in the catalog.
  async function fleet(count: number): Promise<{ c: Control; nodes: FakeNode[] }> {
    c = await startControlOn(backend, );
    const nodes = await enrollNodes(c, count);
    for (const n of nodes) assert.equal((await n.heartbeat()).status, 200);
    nodes.sort((x, y) => (x.nodeId < y.nodeId ? -1 : 1));
    await c.addRelease('web', '1.1.0');
    return { c, nodes };
  }

  async function view(ctl: Control, app = 'web'): Promise<RunStatusView> {
    return ctl.store.read(async (tx) => {
      const run = await tx.runs.latest(app);
      assert.ok(run, 'a run');
      return describeRun(tx, run);
    });
  }

  const latestRun = (ctl: Control, app: string) => ctl.store.read((tx) => tx.runs.latest(app));

  // A node answers what it is asked, and the rollout ticker has acted on its verdict (a
  // verdict wakes the ticker after its commit, not before the next heartbeat's answer).
  const answered = async (n: FakeNode, ...a: Parameters<FakeNode['answer']>) => {
    const desired = await n.answer(...a);
    await c!.server.tick();
    return desired;
  };

  const stateOf = (v: RunStatusView, n: FakeNode) => v.nodes.find((x) => x.nodeId === n.nodeId)?.state;
  const issuedCount = async (ctl: Control) => (await ctl.store.read(async (tx) => Promise.all((await tx.runs.latestAll()).map((r) => tx.runs.issued(r.id))))).flat().length;

  test('the canary goes first, then batches; active receipts confirm each node and the run succeeds', async () => {
    const { c, nodes } = await fleet(5);
    const [n0, n1, n2, n3, n4] = nodes as [FakeNode, FakeNode, FakeNode, FakeNode, FakeNode];
    await startRun(c.store, 'web', '1.1.0', { canary: [n3.nodeId], batch: '2', bakeMs: 0 });
    for (const n of [n0, n1, n2, n4]) assert.deepEqual((await n.heartbeat()).body.desired, [], 'only the canary is asked first');
    assert.equal((await answered(n3, 'active')).length, 1);
    assert.equal(stateOf((await view(c)), n3), 'confirmed');
    // The first batch: the two lowest nodeIds.
    const asked = [];
    for (const n of [n0, n1, n2, n4]) if ((await n.heartbeat()).body.desired.length) asked.push(n.nodeId);
    assert.deepEqual(asked, [n0.nodeId, n1.nodeId]);
    await answered(n0, 'active');
    assert.deepEqual((await n2.heartbeat()).body.desired, [], 'the next batch waits for the whole batch');
    await answered(n1, 'active');
    await answered(n2, 'active');
    await answered(n4, 'active');
    const v = (await view(c));
    assert.equal(v.status, 'succeeded');
    assert.deepEqual(v.nodes.map((x) => x.state), ['confirmed', 'confirmed', 'confirmed', 'confirmed', 'confirmed']);
    assert.equal((await latestRun(c, 'web'))?.status, 'succeeded', 'the end is recorded');
  });

  test('desired carries the signed manifest and the issued attemptId, and stops once a counting receipt arrives', async () => {
    const { c, nodes } = await fleet(1);
    const n = nodes[0] as FakeNode;
    await startRun(c.store, 'web', '1.1.0', {});
    const first = await n.heartbeat();
    assert.equal(first.body.desired.length, 1);
    const d = first.body.desired[0];
    assert.deepEqual([d.app, d.version, d.attemptId], ['web', '1.1.0', (await view(c)).nodes[0]?.attemptId]);
    const pub = createPublicKey(c.releaseKey.publicPem);
    const opened = openEnvelope(d.manifest, DOMAINS.manifest, new Map([[keyIdOf(pub), pub]]));
    assert.ok(opened.ok, 'the manifest verifies with the release key');
    const m = manifestPayloadSchema.parse(opened.payload);
    assert.deepEqual([m.name, m.version, m.url], ['web', '1.1.0', `${c.server.url}/v1/artifacts/web/1.1.0.tgz`]);
    // A receipt that does not count (an operator's update) does not stop it.
    assert.equal((await n.heartbeat({ receipts: [n.receipt({ attemptId: 'cli-9', outcome: 'refused', targetVersion: null, reason: { code: 'BUSY', message: 'busy' } })] })).body.desired.length, 1);
    const answered = await n.heartbeat({ receipts: [n.receipt({ attemptId: d.attemptId, targetVersion: '1.1.0' })] });
    assert.deepEqual(answered.body.desired, []);
  });

  test('a rolled-back canary halts the run before any other node is issued', async () => {
    const { c, nodes } = await fleet(3);
    await startRun(c.store, 'web', '1.1.0', {});
    await answered((nodes[0] as FakeNode), 'rolled-back', 'REPLACEMENT_UNHEALTHY');
    for (const n of nodes.slice(1)) assert.deepEqual((await n.heartbeat()).body.desired, []);
    const v = (await view(c));
    assert.equal(v.status, 'halted');
    assert.deepEqual([v.haltReason?.code, v.haltReason?.nodeId], ['REPLACEMENT_UNHEALTHY', nodes[0]?.nodeId]);
    assert.equal(await issuedCount(c), 1);
  });

  test('a QUARANTINED refusal marks the canary refused and hands the role on; the run goes on', async () => {
    const { c, nodes } = await fleet(3);
    const [n0, n1, n2] = nodes as [FakeNode, FakeNode, FakeNode];
    await startRun(c.store, 'web', '1.1.0', {});
    await answered(n0, 'refused', 'QUARANTINED');
    let v = (await view(c));
    assert.deepEqual([v.status, stateOf(v, n0), v.canaryNodes.length], ['running', 'refused', 1]);
    const next = nodes.find((n) => n.nodeId === v.canaryNodes[0])!;
    assert.ok([n1, n2].includes(next), 'another node took the role');
    for (const n of [next, next === n1 ? n2 : n1]) await answered(n, 'active');
    v = (await view(c));
    assert.deepEqual([v.status, v.nodes.map((x) => x.state)], ['succeeded', ['refused', 'confirmed', 'confirmed']]);
  });

  test('a SIGNATURE_INVALID refusal halts the run', async () => {
    const { c, nodes } = await fleet(2);
    await startRun(c.store, 'web', '1.1.0', {});
    await answered((nodes[0] as FakeNode), 'refused', 'SIGNATURE_INVALID');
    const v = (await view(c));
    assert.deepEqual([v.status, v.haltReason?.code], ['halted', 'SIGNATURE_INVALID']);
    assert.deepEqual((await (nodes[1] as FakeNode).heartbeat()).body.desired, []);
  });

  test('a canary that never answers halts the run as timed-out on the tick, without any heartbeat', async () => {
    const { c, nodes } = await fleet(2);
    await startRun(c.store, 'web', '1.1.0', { verdictTimeoutMs: 10 * MINUTE });
    assert.equal((await (nodes[0] as FakeNode).heartbeat()).body.desired.length, 1);
    c.clock.advance(10 * MINUTE);
    await c.server.tick();
    assert.equal((await latestRun(c, 'web'))?.status, 'running', 'at the deadline it still waits');
    c.clock.advance(1);
    await c.server.tick();
    const run = await latestRun(c, 'web');
    assert.deepEqual([run?.status, run?.haltCode, run?.haltNodeId], ['halted', 'TIMED_OUT', nodes[0]?.nodeId]);
    assert.equal(stateOf((await view(c)), nodes[0] as FakeNode), 'timed-out');
  });

  test('a reverted canary is not asked again in a later run, even after its quarantine ended, unless the run allows retrying reverted nodes', async () => {
    const { c, nodes } = await fleet(2);
    const [n0, n1] = nodes as [FakeNode, FakeNode];
    await startRun(c.store, 'web', '1.1.0', { canary: [n0.nodeId] });
    await answered(n0, 'rolled-back', 'REPLACEMENT_UNHEALTHY', { retryAfter: c.clock.now() + MINUTE });
    assert.equal((await view(c)).status, 'halted');
    c.clock.advance(2 * MINUTE);
    for (const n of nodes) await n.heartbeat();
    await assert.rejects(startRun(c.store, 'web', '1.1.0', { canary: [n0.nodeId] }), /not a node this run would ask: excluded-reverted/, 'naming it canary is refused');
    await startRun(c.store, 'web', '1.1.0', { canary: [] });
    assert.deepEqual((await n0.heartbeat()).body.desired, []);
    assert.equal(stateOf((await view(c)), n0), 'excluded-reverted');
    await answered(n1, 'active');
    assert.equal((await view(c)).status, 'succeeded');

    await startRun(c.store, 'web', '1.1.0', { canary: [n0.nodeId], allowRetryReverted: true });
    assert.equal((await n0.heartbeat()).body.desired.length, 1);
  });

  test('one run per app: a second start is refused BUSY while the first runs; stop ends it and clears desired', async () => {
    const { c, nodes } = await fleet(1);
    await startRun(c.store, 'web', '1.1.0', {});
    await assert.rejects(startRun(c.store, 'web', '1.1.0', {}), { code: 'BUSY' });
    assert.equal((await (nodes[0] as FakeNode).heartbeat()).body.desired.length, 1);
    await stopRun(c.store, 'web');
    assert.equal((await view(c)).status, 'stopped');
    assert.deepEqual((await (nodes[0] as FakeNode).heartbeat()).body.desired, []);
    await assert.rejects(stopRun(c.store, 'web'), { code: 'NOT_FOUND' });
  });

  test('a start or a retry after a run has timed out, before any tick, ends that run halted and is not refused BUSY', async () => {
    const { c, nodes } = await fleet(2);
    const [n0, n1] = nodes as [FakeNode, FakeNode];
    // The canary never answers; with tickMs 0 and no commit to wake it, no tick sees the timeout.
    const first = await startRun(c.store, 'web', '1.1.0', { verdictTimeoutMs: 5000 });
    c.clock.advance(6000);
    assert.equal((await latestRun(c, 'web'))?.status, 'running');
    assert.equal((await view(c)).status, 'halted', 'rollout status already shows it halted');
    await c.addRelease('web', '1.1.1');
    // A dry run shows the plan the start would make, and writes nothing: the run is still running.
    const dry = await dryRunStart(c.store, 'web', '1.1.1', { canary: [n1.nodeId], verdictTimeoutMs: 5000 });
    assert.equal(dry.simulation.batches[0]?.nodes.join(), n1.nodeId, JSON.stringify(dry.simulation));
    assert.equal((await latestRun(c, 'web'))?.status, 'running');
    const second = await startRun(c.store, 'web', '1.1.1', { canary: [n1.nodeId], verdictTimeoutMs: 5000 });
    const ended = await c.store.read((tx) => tx.runs.get(first.id));
    assert.deepEqual([ended?.status, ended?.haltCode, second.status], ['halted', 'TIMED_OUT', 'running']);
    // The same for a retry.
    c.clock.advance(6000);
    assert.equal((await dryRunRetry(c.store, 'web', { canary: [n0.nodeId] })).run.retryOf, second.id);
    const third = await retryRun(c.store, 'web', { canary: [n0.nodeId] });
    assert.deepEqual([(await c.store.read((tx) => tx.runs.get(second.id)))?.status, third.status], ['halted', 'running']);
    // A run that goes on is still refused, and the refused start changed nothing.
    await assert.rejects(startRun(c.store, 'web', '1.1.1', {}), { code: 'BUSY' });
    await assert.rejects(dryRunStart(c.store, 'web', '1.1.1', {}), { code: 'BUSY' });
    await assert.rejects(dryRunRetry(c.store, 'web', {}), { code: 'BUSY' });
    assert.equal((await latestRun(c, 'web'))?.id, third.id);
  });

  test('retry starts a new run over only the nodes the last run did not confirm', async () => {
    const { c, nodes } = await fleet(3);
    const [n0, n1, n2] = nodes as [FakeNode, FakeNode, FakeNode];
    await startRun(c.store, 'web', '1.1.0', {});
    await answered(n0, 'active');
    await answered(n1, 'failed', 'ROLLBACK_UNHEALTHY');
    assert.equal((await view(c)).status, 'halted');
    const run = await retryRun(c.store, 'web', { allowRetryReverted: true, canary: [n1.nodeId] });
    const members = (await c.store.read((tx) => tx.runs.nodes(run.id))).map((r) => r.nodeId);
    assert.deepEqual(members, [n1.nodeId, n2.nodeId]);
    assert.deepEqual((await n0.heartbeat()).body.desired, []);
    await answered(n1, 'active');
    await answered(n2, 'active');
    assert.equal((await view(c)).status, 'succeeded');
  });

  test('a node stale at the run start is skipped and never issued, even once it comes back', async () => {
    const { c, nodes } = await fleet(2);
    const [fresh, stale] = nodes as [FakeNode, FakeNode];
    c.clock.advance(4 * 30_000);
    await fresh.heartbeat();
    await assert.rejects(startRun(c.store, 'web', '1.1.0', { canary: [stale.nodeId] }), /skipped \(NO_RECENT_HEARTBEAT\)/, 'naming it canary is refused');
    await startRun(c.store, 'web', '1.1.0', { canary: [] });
    assert.deepEqual((await stale.heartbeat()).body.desired, []);
    assert.equal(stateOf((await view(c)), stale), 'skipped');
    await answered(fresh, 'active');
    assert.equal((await view(c)).status, 'succeeded');
  });

  test('a run refuses a release missing from the catalog or whose manifest expires within the verdict timeout', async () => {
    const { c } = await fleet(1);
    await assert.rejects(startRun(c.store, 'web', '9.9.9', {}), { code: 'NOT_FOUND' });
    await c.addRelease('web', '1.2.0', { expiresDays: 1 });
    await assert.rejects(startRun(c.store, 'web', '1.2.0', { verdictTimeoutMs: 2 * 86_400_000 }), { code: 'MANIFEST_EXPIRED' });
    assert.equal((await startRun(c.store, 'web', '1.2.0', { verdictTimeoutMs: 3_600_000 })).status, 'running');
  });

  test("serve's tick timer, on the injected clock, halts a silent node's run with no heartbeat at all", async () => {
    c = await startControlOn(backend, { tickMs: 1000 });
    const n = await new FakeNode(c).enroll();
    n.setCurrent('web', '1.0.0');
    await n.heartbeat();
    await c.addRelease('web', '1.1.0');
    await startRun(c.store, 'web', '1.1.0', { verdictTimeoutMs: 5000 });
    for (let i = 0; i < 6; i++) {
      // The timer's loop has run its tick (whatever the store's I/O) and sleeps again.
      await c.clock.asleep();
      c.clock.advance(1000);
    }
    await c.clock.asleep();
    const run = await latestRun(c, 'web');
    assert.deepEqual([run?.status, run?.haltCode], ['halted', 'TIMED_OUT']);
  });
});
