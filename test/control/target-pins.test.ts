// Node pins (docs/design.md §18): a pinned node is held at the pin's version whatever its target
// wants, and shows `pinned` with who, why and until when; a pin to another version is carried to
// the node by a run of its own; an expired pin is lifted by the control plane itself, audited as
// the system's act, and the node then converges to its target. A pin of an unknown node, app or
// version is refused with a clear code and nothing written.
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { runOperation, type Operation } from '../../src/control/operations/operation.js';
import { nodesPin, nodesUnpin } from '../../src/control/operations/pin-ops.js';
import { removeRelease } from '../../src/control/catalog/remove-release.js';
import { targetSet, targetStatus } from '../../src/control/operations/target-ops.js';
import type { TargetView } from '../../src/control/targets/target-view.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { FakeNode, startControlOn, tickThrough, type Control } from '../helpers/control-harness.js';
import { describeEachBackend } from '../helpers/store-backends.js';

describeEachBackend((backend) => {
  let c: Control<ControlStore>;
  const actor = { operator: 'alice', role: 'operator' as const, source: null };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const op = <O = any>(o: Operation<any, any>, input: unknown): Promise<O> => runOperation({ store: c.store, actor, artifactsDir: '' }, o, input) as Promise<O>;
  const changes = async () => (await c.store.read((tx) => tx.audit.page(0, 0, 100))).filter((x) => x.action !== 'release.add');

  beforeEach(async () => {
    c = await startControlOn(backend, { heartbeatSeconds: 30 });
    await c.addRelease('web', '1.0.0');
    await c.addRelease('web', '1.1.0');
    await c.addRelease('web', '1.2.0');
  });
  afterEach(() => c.close());

  async function node(hostname: string): Promise<FakeNode> {
    const n = await new FakeNode(c, hostname).enroll(await c.token(3_600_000, { env: 'prod' }));
    n.setCurrent('web', '1.0.0');
    assert.equal((await n.heartbeat()).status, 200);
    return n;
  }

  async function round(online: FakeNode[], ms = 10_000): Promise<TargetView> {
    c.clock.advance(ms);
    for (const n of online) await n.answer('active');
    await tickThrough(c);
    return op<TargetView>(targetStatus, { name: 'prod' });
  }

  const entry = (v: TargetView, n: FakeNode) => v.nodes.find((x) => x.nodeId === n.nodeId)!;

  test('a pinned node stays at its pin with who, why and until; the expired pin is lifted and audited by the system, and the node converges', async () => {
    const a = await node('host-a');
    const b = await node('host-b');
    const pinned = await op(nodesPin, { nodeId: b.nodeId, pin: 'web=1.0.0', reason: 'INC-42: investigating', until: '5m' });
    assert.equal(pinned.pin.by, 'alice');
    assert.equal(pinned.pin.until, c.clock.now() + 5 * 60_000);
    await op(targetSet, { name: 'prod', app: 'web', version: '1.1.0', select: 'env=prod', canaries: '0', batch: '100%', bake: '0' });
    let v = await round([a, b]);
    v = await round([a, b]);
    assert.equal(entry(v, a).version, '1.1.0');
    const r = entry(v, b).reason!;
    assert.deepEqual([entry(v, b).version, r.reason, r.by, r.until], ['1.0.0', 'pinned', 'alice', pinned.pin.until]);
    assert.match(r.message, /pinned to web 1\.0\.0: INC-42: investigating/);
    assert.equal(b.apps[0]?.current, '1.0.0', 'the pinned node was not asked to move');

    // Past its until: the next round lifts it, and the node converges with no command.
    for (let i = 0; i < 30 && entry(v, b).version !== '1.1.0'; i++) v = await round([a, b], 30_000);
    assert.equal(entry(v, b).version, '1.1.0');
    assert.equal(v.status, 'converged');
    assert.equal(await c.store.read((tx) => tx.pins.get(b.nodeId, 'web')), null);
    const lifted = (await changes()).filter((x) => x.action === 'nodes.unpin');
    assert.equal(lifted.length, 1);
    assert.equal(lifted[0]!.operator, 'system:steward-control', 'the system lifted it, not an operator');
    assert.equal(lifted[0]!.target, b.nodeId);
    assert.deepEqual([lifted[0]!.details.reason, lifted[0]!.details.until, lifted[0]!.details.pinnedBy], ['expired', pinned.pin.until, 'alice']);
  });

  test('a pin to another version is carried to the node by a pin run; the target shows it pinned, and unpinning lets the target converge it', async () => {
    const a = await node('host-a');
    const b = await node('host-b');
    await op(nodesPin, { nodeId: b.nodeId, pin: 'web=1.2.0', reason: 'canary of 1.2.0 by hand' });
    await op(targetSet, { name: 'prod', app: 'web', version: '1.1.0', select: 'env=prod', canaries: '0', batch: '100%', bake: '0' });
    let v = await round([a, b]);
    for (let i = 0; i < 6; i++) v = await round([a, b]);
    assert.equal(entry(v, b).version, '1.2.0', 'the pin run carried 1.2.0 to host-b');
    assert.equal(entry(v, b).reason?.reason, 'pinned');
    assert.equal(entry(v, a).version, '1.1.0');
    const owners = await c.store.read(async (tx) => Promise.all((await tx.runs.page('web', null, 10)).map((r) => tx.targets.ownerOf(r.id))));
    assert.ok(owners.some((o) => o?.kind === 'pin'), 'a pin run of its own');
    await op(nodesUnpin, { nodeId: b.nodeId, app: 'web' });
    for (let i = 0; i < 6; i++) v = await round([a, b]);
    assert.equal(entry(v, b).version, '1.1.0');
    assert.equal(v.status, 'converged');
  });

  test('a pin of an unknown node, app or version, or without a reason, is refused and writes nothing; a pinned or targeted version cannot leave the catalog', async () => {
    const a = await node('host-a');
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ nodeId: 'no-such-node', pin: 'web=1.1.0', reason: 'x' }, 'NOT_FOUND', /node no-such-node is not enrolled/],
      [{ nodeId: a.nodeId, pin: 'api=1.1.0', reason: 'x' }, 'NOT_FOUND', /no release of api is in the catalog/],
      [{ nodeId: a.nodeId, pin: 'web=9.9.9', reason: 'x' }, 'NOT_FOUND', /web 9\.9\.9 is not in the catalog/],
      [{ nodeId: a.nodeId, pin: 'web', reason: 'x' }, 'USAGE', /is not APP=VERSION/],
      [{ nodeId: a.nodeId, pin: 'web=1.1.0' }, 'USAGE', /--reason is required/],
      [{ nodeId: a.nodeId, pin: 'web=1.1.0', reason: '   ' }, 'USAGE', /--reason must say why/],
      [{ nodeId: a.nodeId, pin: 'web=1.1.0', reason: 'x', until: 'soon' }, 'USAGE', /--until/],
    ];
    for (const [input, code, message] of cases) {
      await assert.rejects(op(nodesPin, input), (err: { code?: string; message?: string }) => {
        assert.equal(err.code, code, JSON.stringify(input));
        assert.match(err.message ?? '', message);
        return true;
      });
    }
    await assert.rejects(op(nodesUnpin, { nodeId: a.nodeId, app: 'web' }), { code: 'NOT_FOUND' });
    // A version a pin or a target names stays in the catalog until they are lifted.
    await op(nodesPin, { nodeId: a.nodeId, pin: 'web=1.2.0', reason: 'x' });
    await assert.rejects(removeRelease(c.store, c.dir, 'web', '1.2.0'), (err: { code?: string; message?: string }) => err.code === 'BUSY' && /pinned to web 1\.2\.0/.test(err.message ?? ''));
    await op(nodesUnpin, { nodeId: a.nodeId, app: 'web' });
    await op(targetSet, { name: 'prod', app: 'web', version: '1.2.0', select: 'env=none' });
    await assert.rejects(removeRelease(c.store, c.dir, 'web', '1.2.0'), (err: { code?: string; message?: string }) => err.code === 'BUSY' && /target prod wants web 1\.2\.0/.test(err.message ?? ''));
    assert.deepEqual(await c.store.read((tx) => tx.pins.list()), []);
    assert.deepEqual((await changes()).map((x) => x.action), ['nodes.pin', 'nodes.unpin', 'target.set'], 'the refusals wrote nothing');
  });
});
