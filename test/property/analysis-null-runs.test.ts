// 100 runs of a release identical to the old one, each with its own seeded noise, played through the
// pure planner and the real judgement with --analysis enforce (test/helpers/analysis-run-sim.ts):
// none halts and none pauses (0 false halts); and 20 runs of a bad release (errors 0.1 % to 2 %) all
// halt ANALYSIS_FAILED after the first batch's window, before a second batch. The end-to-end file
// (test/e2e/analysis-fleet.test.ts) plays a few of each through the HTTP API on both backends.
// STEWARD_TEST_SEED=N starts the seeds at N.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { simulateAnalysedRun } from '../helpers/analysis-run-sim.js';
import type { NodeBehaviour } from '../helpers/signal-noise.js';

const FIRST = Number(process.env.STEWARD_TEST_SEED ?? 1);
const QUIET: NodeBehaviour = { restartsPerHour: 0.2, livenessPerHour: 0.1, requestsPerMinute: 60, errorRatio: 0.001 };
const RECYCLING: NodeBehaviour = { restartsPerHour: 12, livenessPerHour: 1, requestsPerMinute: 60, errorRatio: 0.001 };
const WINDOW = 10 * 60_000;

test('a release like the old one, 100 seeded runs of 50 nodes in batches of 10 with enforced analysis: no halt, no pause', () => {
  const ended: string[] = [];
  for (let seed = FIRST; seed < FIRST + 100; seed++) {
    const r = simulateAnalysedRun({ seed, nodes: 50, batch: 10, windowMs: WINDOW, old: seed % 2 ? QUIET : RECYCLING, next: seed % 2 ? QUIET : RECYCLING });
    if (r.status !== 'succeeded') ended.push(`seed ${seed}: ${r.status} ${r.haltCode}: ${r.haltMessage}`);
    else assert.deepEqual(r.judgements.map((j) => j.step), [1, 2, 3, 4], `seed ${seed}: every step with one after it judged`);
  }
  assert.deepEqual(ended, []);
});

test('a bad release (errors 0.1 % to 2 %), 20 seeded runs: each halts ANALYSIS_FAILED within 2 windows of its first batch, before its second', () => {
  for (let seed = FIRST; seed < FIRST + 20; seed++) {
    const r = simulateAnalysedRun({ seed, nodes: 50, batch: 10, windowMs: WINDOW, old: QUIET, next: { ...QUIET, errorRatio: 0.02 } });
    assert.equal(r.status, 'halted', `seed ${seed}: ${r.status} ${r.haltMessage}`);
    assert.equal(r.haltCode, 'ANALYSIS_FAILED');
    assert.equal(r.batchesIssued, 1, `seed ${seed}`);
    assert.ok(r.minutesToEnd! <= 2 * (WINDOW / 60_000), `seed ${seed}: ${r.minutesToEnd} min`);
    assert.match(r.haltMessage!, /error-ratio: canary .* vs baseline /);
  }
});
