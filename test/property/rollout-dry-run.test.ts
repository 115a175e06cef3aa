// A dry run followed at once by a real run issues exactly what the dry run showed, in that order
// (docs/design.md §11), for random fleets, selectors and policies: the real run goes through the control
// plane's own code on a real store, SQLite and PostgreSQL (start, advance on the store's fake
// clock, verdicts as stored receipts), every node confirming as soon as it is asked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { advanceRun } from '../../src/control/rollouts/advance-runs.js';
import { dryRunStart, startRun } from '../../src/control/rollouts/start-run.js';
import { planRun } from '../../src/control/rollouts/plan-run.js';
import type { HeartbeatApp } from '../../src/core/heartbeat-schema.js';
import { FakeClock } from '../helpers/control-harness.js';
import { describeEachBackend, type StoreBackend } from '../helpers/store-backends.js';
import { checkProperty } from './property-run.js';

const T0 = Date.parse('2026-06-01T01:30:00Z');

const scenario = fc.record({
  nodes: fc.array(fc.record({ env: fc.constantFrom('prod', 'staging'), hasApp: fc.integer({ min: 0, max: 5 }).map((x) => x > 0), current: fc.constantFrom('1.0.0', '1.0.0', '2.0.0') }), { minLength: 1, maxLength: 12 }),
  selector: fc.constantFrom('', 'env=prod', 'env!=staging', 'env in (prod,staging)'),
  canaries: fc.integer({ min: 0, max: 3 }),
  seed: fc.nat(),
  batch: fc.oneof(fc.integer({ min: 1, max: 4 }).map(String), fc.integer({ min: 1, max: 100 }).map((p) => `${p}%`)),
  bakeMs: fc.constantFrom(0, 60_000, 5 * 60_000),
  window: fc.boolean(),
});

const app = (current: string): HeartbeatApp => ({ name: 'web', current, previous: null, held: false, blocked: false, supervisor: { state: 'running', attempts: 0, since: null } });

async function check(backend: StoreBackend, sc: typeof scenario extends fc.Arbitrary<infer T> ? T : never): Promise<void> {
  const clock = new FakeClock(T0);
  const store = await backend.open({ clock });
  try {
    await store.write(async (tx) => {
      await tx.settings.set('heartbeatSeconds', '30');
      await tx.releases.upsert({ app: 'web', version: '2.0.0', manifest: { payload: 'e30=', sig: 'x', keyId: '0000000000000000' }, integrity: 'sha512-x', size: 1, expires: T0 + 86_400_000, artifactPath: null, addedAt: T0, keyId: '0000000000000000' });
      for (const [i, n] of sc.nodes.entries()) {
        const nodeId = `n-${String(i).padStart(12, '0')}`;
        await tx.nodes.insert({ nodeId, hostname: nodeId, nodePublicKey: 'k', helperPublicKey: 'k', enrolledAt: T0, labels: { env: n.env } });
        await tx.nodes.recordHeartbeat({ v: 1, nodeId, seq: 1, sentAt: T0, bootId: 'b', agentVersion: '0.1.0', apps: n.hasApp ? [app(n.current)] : [], receipts: [] }, T0 - 1000);
      }
    });
    const opts = { selector: sc.selector, canaries: sc.canaries, seed: sc.seed, batch: sc.batch, bakeMs: sc.bakeMs, ...(sc.window ? { windows: ['daily 01:00-02:00'] } : {}), verdictTimeoutMs: 10 * 60_000 };
    const dry = await dryRunStart(store, 'web', '2.0.0', opts).catch((e: Error & { code?: string }) => e);
    if (dry instanceof Error) {
      // Nothing to target: the real start is refused the same way.
      await assert.rejects(startRun(store, 'web', '2.0.0', opts), { message: dry.message });
      return;
    }
    const run = await startRun(store, 'web', '2.0.0', opts);
    let seq = 10;
    for (let step = 0; step < 200; step++) {
      const { issuedNow, plan } = await store.write(async (tx) => {
        const issued = await tx.runs.issued(run.id);
        const answered = new Set((await tx.receipts.countingForRun(run.id)).map((r) => r.attemptId));
        const now = await tx.now();
        for (const i of issued) {
          if (answered.has(i.attemptId)) continue;
          const payload = { v: 1 as const, nodeId: i.nodeId, app: 'web', attemptId: i.attemptId, seq: ++seq, fromVersion: '1.0.0', targetVersion: '2.0.0', integrity: null, outcome: 'active' as const, startedAt: now, updatedAt: now };
          await tx.receipts.insert(i.nodeId, { envelope: { payload: 'e30=', sig: 'x', keyId: '0000000000000000' }, payload, counts: true }, now);
        }
        await advanceRun(tx, run.id);
        return { issuedNow: (await tx.runs.issued(run.id)).filter((i) => !issued.some((x) => x.attemptId === i.attemptId)), plan: await planRun(tx, (await tx.runs.get(run.id))!, now) };
      });
      if (issuedNow.length) continue;
      if (['succeeded', 'halted', 'stopped'].includes(plan.status) || plan.wakeAt === null) break;
      clock.t = plan.wakeAt;
    }
    // What the run issued, batch by batch in the order issued (the first inside startRun).
    const expected = dry.simulation.batches.map((b) => ({ ...b, nodes: [...b.nodes].sort() }));
    type Batch = { batch: number; nodes: string[]; at: number; notAfter: number | null };
    // Two batches may go at one instant (no bake): the batch number is their order then.
    const rows = (await store.read((tx) => tx.runs.issued(run.id))).sort((a, b) => a.issuedAt - b.issuedAt || a.batch - b.batch);
    const seen = rows.reduce<Batch[]>((acc, i) => {
      const last = acc[acc.length - 1];
      if (last && last.batch === i.batch && last.at === i.issuedAt) last.nodes.push(i.nodeId);
      else acc.push({ batch: i.batch, nodes: [i.nodeId], at: i.issuedAt, notAfter: i.notAfter });
      return acc;
    }, []);
    assert.deepEqual(seen.map((b) => ({ ...b, nodes: b.nodes.sort() })), expected);
  } finally {
    await store.close();
  }
}

describeEachBackend((backend) => {
  // Fewer runs on PostgreSQL: each makes a database (about 0.2 s).
  test('a dry run followed at once by a real run issues exactly what the dry run showed, in that order', async () => {
    await checkProperty('dry run = real run', fc.asyncProperty(scenario, (sc) => check(backend, sc)), backend.name === 'sqlite' ? 100 : 30);
  });
});
