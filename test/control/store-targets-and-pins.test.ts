// The store's targets, run owners and pins (docs/design.md §18), on both backends: a target is put,
// replaced whole and removed; a run's owner is recorded once; a pin is put, replaced, carried
// and lifted; a running run's nodes are added or recorded again.
import { ANALYSIS_OFF, DEFAULT_RUN_ANALYSIS } from '../../src/core/run-analysis.js';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ControlStore, NewRun, TargetRow } from '../../src/control/store/store.js';
import { generateKeyPair } from '../../src/platform/keys.js';
import { FakeClock, T0 } from '../helpers/control-harness.js';
import { describeEachBackend } from '../helpers/store-backends.js';

const run = (over: Partial<NewRun> = {}): NewRun => ({
  app: 'web', version: '1.1.0', startedAt: T0, heartbeatIntervalMs: 30_000, selector: '', canaries: 1, namedCanaries: [], canarySeed: 1, batch: '1', bakeMs: 0,
  maxFailures: 0, maxRefused: '50%', maxFetchFailures: '20%', failuresCarried: 0, verdictTimeoutMs: 60_000, allowRetryReverted: false, windows: [], tz: 'UTC', startAt: null, behind: false, retryOf: null, analysis: ANALYSIS_OFF, ...over,
});

const target = (over: Partial<TargetRow> = {}): TargetRow => ({
  name: 'prod', app: 'web', version: '1.1.0', priority: 0, paused: false, setAt: T0, setBy: 'alice', clearedRunId: 0,
  policy: { selector: 'env=prod', canaries: 1, namedCanaries: [], batch: '10%', bakeMs: 300_000, maxFailures: 0, maxRefused: '50%', maxFetchFailures: '20%', verdictTimeoutMs: 1_800_000, allowRetryReverted: false, windows: ['Mon-Fri 02:00-05:00'], tz: 'Europe/Paris', startAt: null, analysis: DEFAULT_RUN_ANALYSIS },
  ...over,
});

describeEachBackend((backend) => {
  let store: ControlStore;
  before(async () => {
    store = await backend.open({ clock: new FakeClock() });
    const key = generateKeyPair();
    await store.write(async (tx) => {
      for (const id of ['n-a', 'n-b', 'n-c']) await tx.nodes.insert({ nodeId: id, hostname: id, nodePublicKey: key.publicPem, helperPublicKey: key.publicPem, enrolledAt: T0, labels: {} });
    });
  });
  after(() => store.close());

  test('a target is put, replaced whole, listed by name and removed', async () => {
    await store.write(async (tx) => {
      await tx.targets.put(target());
      await tx.targets.put(target({ name: 'canary', priority: 10 }));
    });
    assert.deepEqual(await store.read((tx) => tx.targets.get('prod')), target());
    await store.write((tx) => tx.targets.put(target({ version: '1.2.0', paused: true, clearedRunId: 7, setBy: null })));
    assert.deepEqual(await store.read((tx) => tx.targets.get('prod')), target({ version: '1.2.0', paused: true, clearedRunId: 7, setBy: null }));
    assert.deepEqual((await store.read((tx) => tx.targets.list())).map((t) => t.name), ['canary', 'prod']);
    assert.equal(await store.write((tx) => tx.targets.remove('canary')), true);
    assert.equal(await store.write((tx) => tx.targets.remove('canary')), false);
    assert.equal(await store.read((tx) => tx.targets.get('canary')), null);
  });

  test("a run's owner is recorded once; a target's runs come newest first; refreezeNodes adds nodes and records members again", async () => {
    const ids = await store.write(async (tx) => {
      const first = await tx.runs.insert(run(), [{ nodeId: 'n-a', lastHeartbeatAt: T0, listedApp: true }]);
      await tx.targets.linkRun({ runId: first, kind: 'target', target: 'prod' });
      await tx.runs.end(first, 'succeeded', undefined, T0);
      const second = await tx.runs.insert(run(), [{ nodeId: 'n-a', lastHeartbeatAt: T0, listedApp: true }]);
      await tx.targets.linkRun({ runId: second, kind: 'target', target: 'prod' });
      return [first, second] as const;
    });
    assert.deepEqual(await store.read((tx) => tx.targets.runs('prod')), [
      { runId: ids[1], kind: 'target', target: 'prod' },
      { runId: ids[0], kind: 'target', target: 'prod' },
    ]);
    assert.deepEqual(await store.read((tx) => tx.targets.ownerOf(ids[1])), { runId: ids[1], kind: 'target', target: 'prod' });
    await assert.rejects(store.write((tx) => tx.targets.linkRun({ runId: ids[1], kind: 'pin', target: null })), 'one owner per run');
    await store.write((tx) => tx.runs.refreezeNodes(ids[1], [
      { nodeId: 'n-a', lastHeartbeatAt: T0 + 5, listedApp: false },
      { nodeId: 'n-b', lastHeartbeatAt: T0 + 6, listedApp: true },
    ]));
    const nodes = await store.read((tx) => tx.runs.nodes(ids[1]));
    assert.deepEqual(nodes.map((n) => [n.nodeId, n.lastHeartbeatAt, n.listedApp]), [['n-a', T0 + 5, false], ['n-b', T0 + 6, true]]);
    await store.write((tx) => tx.runs.end(ids[1], 'stopped', undefined, T0));
  });

  test('a pin is put, replaced, carried by a run and lifted with its row returned', async () => {
    const pin = { nodeId: 'n-c', app: 'web', version: '1.0.0', by: 'alice', reason: 'INC-42', at: T0, until: T0 + 60_000, runId: null };
    await store.write((tx) => tx.pins.put(pin));
    assert.deepEqual(await store.read((tx) => tx.pins.get('n-c', 'web')), pin);
    await store.write((tx) => tx.pins.setRun('n-c', 'web', 42));
    assert.equal((await store.read((tx) => tx.pins.get('n-c', 'web')))?.runId, 42);
    const replaced = { ...pin, version: '1.2.0', until: null, runId: null };
    await store.write((tx) => tx.pins.put(replaced));
    assert.deepEqual(await store.read((tx) => tx.pins.list()), [replaced]);
    assert.deepEqual(await store.write((tx) => tx.pins.remove('n-c', 'web')), replaced);
    assert.equal(await store.write((tx) => tx.pins.remove('n-c', 'web')), null);
  });
});
