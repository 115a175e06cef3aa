// The latest signals per node and app (docs/design.md §19) are kept with the node's apps, on both
// backends: the values as sent (whole numbers up to 2^53 included), the next heartbeat's replacing them.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { HeartbeatApp } from '../../src/core/heartbeat-schema.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { generateKeyPair } from '../../src/platform/keys.js';
import { FakeClock, T0 } from '../helpers/control-harness.js';
import { describeEachBackend } from '../helpers/store-backends.js';

const signals = (restarts: number): NonNullable<HeartbeatApp['signals']> => ({
  since: '2026-01-02T03:04:05.678Z', restarts, livenessFailures: 1, watchdogKills: 0, oomKills: 2, cpuSeconds: 1_000_000, rssBytes: 2 ** 40,
  requests: Number.MAX_SAFE_INTEGER, errors: 7, scrape: { ok: true, at: '2026-01-02T03:10:00.000Z' },
});
const app = (s?: HeartbeatApp['signals']): HeartbeatApp => ({ name: 'web', current: '1.0.0', previous: null, held: false, blocked: false, supervisor: { state: 'running', attempts: 0, since: null }, ...(s ? { signals: s } : {}) });

describeEachBackend((backend) => {
  let store: ControlStore;
  before(async () => {
    store = await backend.open({ clock: new FakeClock() });
    const key = generateKeyPair();
    await store.write((tx) => tx.nodes.insert({ nodeId: 'n-a', hostname: 'n-a', nodePublicKey: key.publicPem, helperPublicKey: key.publicPem, enrolledAt: T0, labels: {} }));
  });
  after(() => store.close());

  const record = (seq: number, a: HeartbeatApp) => store.write((tx) => tx.nodes.recordHeartbeat({ v: 7, nodeId: 'n-a', seq, sentAt: T0 + seq, bootId: 'b', agentVersion: '0.1.0', apps: [a], receipts: [] }, T0 + seq));
  const stored = async () => (await store.read((tx) => tx.nodes.list())).find((n) => n.nodeId === 'n-a')?.apps[0]?.signals;

  test("a heartbeat's signals are kept as sent, and the next heartbeat's replace them", async () => {
    await record(1, app(signals(1)));
    assert.deepEqual(await stored(), signals(1));
    await record(2, app(signals(3)));
    assert.deepEqual(await stored(), signals(3));
    await record(3, app());
    assert.equal(await stored(), undefined, 'an app reported without signals keeps none of the last');
  });
});
