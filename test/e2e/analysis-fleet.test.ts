// The automated analysis end to end (docs/design.md §19), on both backends: 40 simulated nodes
// heartbeat through the control plane's HTTP API on a fake clock, their signals sampled each minute
// in heartbeat v7 (test/helpers/analysis-fleet.ts), a run of 4 batches of 10 with a 5-minute analysis window:
// - a bad release (errors 0.1 % to 2 %; restarts 0.2 to 30 an hour) halts ANALYSIS_FAILED within 2 windows of its
//   first batch and before its second, both cohorts' figures in the halt reason;
// - a release like the old one, with seeded noise, never halts;
// - an app with no traffic is inconclusive: the run pauses ANALYSIS_INCONCLUSIVE, and a resume
//   lets the next batch go;
// - observe changes nothing (the batches go as with analysis off) and says what it would have done.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { pauseRun, startRun } from '../../src/control/rollouts/start-run.js';
import { describeRun } from '../../src/control/rollouts/run-status.js';
import type { RunOptions } from '../../src/control/rollouts/run-options.js';
import type { ControlStore, RunRow } from '../../src/control/store/store.js';
import { MINUTE } from '../helpers/control-harness.js';
import { AnalysisFleet, ERRORS_2PCT, IDLE, QUIET, RESTARTING, type AnalysisFleetOptions } from '../helpers/analysis-fleet.js';
import { describeEachBackend, type StoreBackend } from '../helpers/store-backends.js';

const WINDOW = 5 * MINUTE;
const RUN: RunOptions = { canaries: 0, batch: '25%', bakeMs: 0, analysis: 'enforce', analysisWindowMs: WINDOW };

const latest = (store: ControlStore) => store.read(async (tx) => (await tx.runs.latest('web')) as RunRow);
const batchesIssued = async (store: ControlStore, runId: number) => [...new Set((await store.read((tx) => tx.runs.issued(runId))).map((i) => i.batch))].sort();
const ended = async (store: ControlStore) => (await latest(store)).status !== 'running';

async function withFleet<T>(backend: StoreBackend, o: Partial<AnalysisFleetOptions> & Pick<AnalysisFleetOptions, 'next'>, fn: (f: AnalysisFleet) => Promise<T>): Promise<T> {
  const fleet = await AnalysisFleet.start(backend, { nodes: 40, seed: 1, old: QUIET, ...o });
  try {
    return await fn(fleet);
  } finally {
    await fleet.close();
  }
}

describeEachBackend((backend) => {
  for (const [what, next] of [['errors from 0.1 % to 2 %', ERRORS_2PCT], ['restarts from 0.2 to 30 an hour', RESTARTING]] as const) {
    test(`a bad release (${what}) halts ANALYSIS_FAILED within 2 windows of its first batch, before its second, with both cohorts' figures`, async () => {
      await withFleet(backend, { next }, async (fleet) => {
        const run = await startRun(fleet.store, 'web', '1.1.0', RUN);
        const firstBatchAt = (await fleet.store.read((tx) => tx.runs.issued(run.id)))[0]!.issuedAt;
        await fleet.until(3 * WINDOW / MINUTE, () => ended(fleet.store));
        const r = await latest(fleet.store);
        assert.equal(r.status, 'halted');
        assert.equal(r.haltCode, 'ANALYSIS_FAILED');
        assert.ok(r.endedAt! - firstBatchAt <= 2 * WINDOW, `halted ${(r.endedAt! - firstBatchAt) / MINUTE} min after the first batch`);
        assert.deepEqual(await batchesIssued(fleet.store, run.id), [1]);
        const signal = next === ERRORS_2PCT ? 'error-ratio' : 'restart-rate';
        assert.match(r.haltMessage!, new RegExp(`the analysis of batch 1 of web 1\\.1\\.0 failed: fail: ${signal}: canary .* \\(10 nodes, .*\\) vs baseline .* \\(30 nodes`));
        const audit = (await fleet.store.read((tx) => tx.audit.page(0, 0, 1000))).filter((e) => e.action === 'rollout.analysis');
        assert.deepEqual(audit.map((e) => [e.operator, e.target, e.details.step, e.details.verdict, e.details.effect]), [['system:steward-control', 'web@1.1.0', 1, 'fail', 'halted']]);
        const view = await fleet.store.read((tx) => describeRun(tx, r));
        assert.equal(view.analysis.steps[0]?.verdict, 'fail');
        assert.equal(view.analysis.steps[0]?.effect, 'halted');
      });
    });
  }

  test('a release like the old one, with seeded noise, never halts: every batch waits its window and goes', async () => {
    for (const seed of backend.name === 'sqlite' ? [11, 12, 13] : [11]) {
      await withFleet(backend, { next: QUIET, seed }, async (fleet) => {
        const run = await startRun(fleet.store, 'web', '1.1.0', RUN);
        await fleet.until(6 * WINDOW / MINUTE, () => ended(fleet.store));
        const r = await latest(fleet.store);
        assert.equal(r.status, 'succeeded', `seed ${seed}: ${r.haltCode} ${r.haltMessage}`);
        assert.deepEqual(await batchesIssued(fleet.store, run.id), [1, 2, 3, 4]);
        const judged = await fleet.store.read((tx) => tx.runs.judgements(run.id));
        assert.deepEqual(judged.map((j) => [j.step, j.verdict]), [[1, 'pass'], [2, 'pass'], [3, 'pass']], `seed ${seed}`);
      });
    }
  });

  test('an app with no traffic is inconclusive: the run pauses ANALYSIS_INCONCLUSIVE, and a resume lets the next batch go', async () => {
    await withFleet(backend, { old: IDLE, next: IDLE }, async (fleet) => {
      const run = await startRun(fleet.store, 'web', '1.1.0', RUN);
      await fleet.until(3 * WINDOW / MINUTE, async () => (await fleet.store.read((tx) => tx.runs.judgements(run.id)))[0] !== undefined);
      const view = await fleet.store.read(async (tx) => describeRun(tx, (await tx.runs.get(run.id))!));
      assert.equal(view.status, 'paused');
      assert.equal(view.pauseReason?.code, 'ANALYSIS_INCONCLUSIVE');
      assert.match(view.pauseReason!.message, /error-ratio: canary no data/);
      // It stays paused: an inconclusive never passes by itself.
      for (let i = 0; i < 3; i++) await fleet.minute();
      assert.deepEqual(await batchesIssued(fleet.store, run.id), [1]);
      await pauseRun(fleet.store, 'web', false, undefined, 'alice');
      await fleet.minute();
      assert.deepEqual(await batchesIssued(fleet.store, run.id), [1, 2]);
      const [j] = await fleet.store.read((tx) => tx.runs.judgements(run.id));
      assert.equal(j?.resumedBy, 'alice');
    });
  });

  test('observe changes nothing: a bad release goes through as with analysis off, and says it would have halted', async () => {
    const play = (analysis: 'off' | 'observe') =>
      withFleet(backend, { next: ERRORS_2PCT, seed: 5 }, async (fleet) => {
        const run = await startRun(fleet.store, 'web', '1.1.0', { ...RUN, bakeMs: 3 * MINUTE, analysis });
        await fleet.until(40, () => ended(fleet.store));
        const issued = await fleet.store.read((tx) => tx.runs.issued(run.id));
        const view = await fleet.store.read(async (tx) => describeRun(tx, (await tx.runs.get(run.id))!));
        const audit = (await fleet.store.read((tx) => tx.audit.page(0, 0, 1000))).filter((e) => e.action === 'rollout.analysis');
        // Each batch and the minute it was issued in, from the first batch's.
        const at = new Map<number, number>();
        for (const i of issued) if (!at.has(i.batch)) at.set(i.batch, Math.floor((i.issuedAt - issued[0]!.issuedAt) / MINUTE));
        return { status: view.status, audit: audit.map((e) => [e.details.mode, e.details.verdict, e.details.effect]), batches: [...at], view };
      });
    const off = await play('off');
    const observe = await play('observe');
    assert.equal(observe.status, 'succeeded');
    // The same batches, each in the same minute give or take one. Why one: tickThrough moves the
    // fake clock 1 s for every 10 ms a tick runs (test/helpers/control-harness.ts), and observe's
    // ticks also judge, so on a loaded machine its clock can run a few seconds ahead and put a
    // batch across a minute boundary (4@13 against 4@12 under load 13). What observe must not do,
    // hold a batch for its analysis window (5 minutes) or halt, is far outside that.
    assert.deepEqual(observe.batches.map(([b]) => b), off.batches.map(([b]) => b));
    for (const [i, [b, m]] of observe.batches.entries()) assert.ok(Math.abs(m - off.batches[i]![1]) <= 1, `batch ${b}: minute ${m} with observe, ${off.batches[i]![1]} with analysis off`);
    const judged = observe.view.analysis.steps.filter((s) => s.verdict !== null);
    assert.ok(judged.length >= 1, 'observe judged a step');
    assert.deepEqual([judged[0]!.verdict, judged[0]!.mode, judged[0]!.effect], ['fail', 'observe', 'would have halted']);
    assert.deepEqual(off.view.analysis.steps, []);
    assert.deepEqual(off.audit, []);
    assert.deepEqual(observe.audit[0], ['observe', 'fail', 'would have halted'], 'the audit log says it too');
  });
});
