// The analysis flags of `rollout start|retry` and `target set` (docs/design.md §19, docs/control-plane.md
// "Automated analysis"): each bad value refused USAGE (exit 2 from the CLI) with nothing written; the
// run records what was given over the defaults (observe, 10m); a retry keeps its run's; a target
// keeps its own for its runs; `rollout status` shows it as text and --json; a target's node waiting
// for an enforced window reads analysis-pending until the window's end, then `paused` with the code
// when an inconclusive judgement paused the run, until `target resume`.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { localActor } from '../../src/control/audit/record-audit.js';
import { formatRun } from '../../src/control/cli/commands/rollout.js';
import { runOperation } from '../../src/control/operations/operation.js';
import { rolloutRetry, rolloutStart, rolloutStop } from '../../src/control/operations/rollout-ops.js';
import { targetResume, targetSet, targetStatus } from '../../src/control/operations/target-ops.js';
import type { RunStatusView } from '../../src/control/rollouts/run-status.js';
import { StewardError } from '../../src/core/errors.js';
import { enrollNodes, MINUTE, startControlInProcess, tickThrough } from '../helpers/control-harness.js';
import { controlCli } from '../helpers/fleet.js';

const c = await startControlInProcess({ heartbeatSeconds: 60 });
after(() => c.close());
const nodes = await enrollNodes(c, 6);
for (const n of nodes) await n.heartbeat();
await c.addRelease('web', '1.1.0');
const ctx = { store: c.store, actor: localActor(), artifactsDir: c.dir };
const usage = (pattern: RegExp) => (err: unknown) => err instanceof StewardError && err.code === 'USAGE' && pattern.test(err.message);

test('bad analysis flags are refused USAGE, by the operation and by the CLI (exit 2), and nothing is written', async () => {
  const start = (o: Record<string, unknown>) => runOperation(ctx, rolloutStart, { app: 'web', version: '1.1.0', ...o });
  await assert.rejects(start({ analysis: 'strict' }), usage(/--analysis "strict" is not one of off, observe, enforce/));
  await assert.rejects(start({ analysisWindow: '30s' }), usage(/--analysis-window "30s" is outside 2m to 1h/));
  await assert.rejects(start({ analysisWindow: '2h' }), usage(/outside 2m to 1h/));
  await assert.rejects(start({ analysisThreshold: ['latency=1'] }), usage(/NAME one of restart-rate, liveness-failures, error-ratio/));
  await assert.rejects(start({ analysisThreshold: ['restart-rate=5%'] }), usage(/only error-ratio is a percentage/));
  assert.equal(await c.store.read((tx) => tx.runs.latest('web')), null);
  const cli = await controlCli(c.dbFile, ['rollout', 'start', 'web', '1.1.0', '--analysis', 'strict', '--json']);
  assert.deepEqual([cli.code, (cli.json as { error: { code: string } }).error.code], [2, 'USAGE']);
});

test('a run records its analysis (defaults: observe, 10m); status shows it as text and --json; a retry keeps it', async () => {
  const dry = (await runOperation(ctx, rolloutStart, { app: 'web', version: '1.1.0', dryRun: true })) as { run: { analysis: unknown } };
  assert.deepEqual(dry.run.analysis, { mode: 'observe', windowMs: 10 * MINUTE, thresholds: {} });
  const v = (await runOperation(ctx, rolloutStart, { app: 'web', version: '1.1.0', canaries: '0', batch: '2', bake: '0', analysis: 'enforce', analysisWindow: '5m', analysisThreshold: ['error-ratio=1%', 'restart-rate=2'] })) as RunStatusView;
  assert.deepEqual([v.analysis.mode, v.analysis.windowMs, v.analysis.thresholds], ['enforce', 5 * MINUTE, { restartRate: 2, livenessRate: 1, errorRatio: 0.01 }]);
  assert.match(formatRun(v), /analysis enforce, window 5m; fails when canaries are worse by restart-rate 2\/h, liveness-failures 1\/h, error-ratio 1\.00 %/);
  await runOperation(ctx, rolloutStop, { app: 'web' });
  const retried = (await runOperation(ctx, rolloutRetry, { app: 'web' })) as RunStatusView;
  assert.deepEqual([retried.analysis.mode, retried.analysis.windowMs, retried.analysis.thresholds.errorRatio], ['enforce', 5 * MINUTE, 0.01]);
  await runOperation(ctx, rolloutStop, { app: 'web' });
});

test("a target's runs get its analysis; while one waits for an enforced window its next nodes read analysis-pending until the window's end", async () => {
  await runOperation(ctx, targetSet, { name: 'all', app: 'web', version: '1.1.0', canaries: '0', batch: '2', bake: '0', analysis: 'enforce', analysisWindow: '5m' });
  let t = (await runOperation(ctx, targetStatus, { name: 'all' })) as { policy: { analysis: { mode: string } }; analysis: { mode: string } | null; run: { id: number } | null; nodes: Array<{ nodeId: string; reason: { reason: string; until: number | null } | null }> };
  assert.equal(t.policy.analysis.mode, 'enforce');
  assert.equal(t.analysis?.mode, 'enforce');
  const issued = await c.store.read((tx) => tx.runs.issued(t.run!.id));
  const first = new Set(issued.map((i) => i.nodeId));
  for (const n of nodes) if (first.has(n.nodeId)) await n.answer('active');
  await tickThrough(c);
  t = (await runOperation(ctx, targetStatus, { name: 'all' })) as typeof t;
  const waiting = t.nodes.filter((n) => !first.has(n.nodeId)).map((n) => n.reason);
  assert.equal(waiting.length, 4);
  for (const r of waiting) {
    assert.equal(r?.reason, 'analysis-pending');
    assert.ok(r!.until! > c.clock.now() && r!.until! <= c.clock.now() + 5 * MINUTE, 'until the window of batch 1 ends');
  }
  // These nodes send no signals: the window passes with no data, the judgement is inconclusive and
  // the run pauses; the target's waiting nodes say so; `target resume` lets batch 2 go.
  c.clock.advance(5 * MINUTE);
  for (const n of nodes) await n.heartbeat();
  await tickThrough(c);
  t = (await runOperation(ctx, targetStatus, { name: 'all' })) as typeof t;
  const paused = t.nodes.filter((n) => !first.has(n.nodeId)).map((n) => n.reason);
  assert.deepEqual([...new Set(paused.map((r) => `${r?.reason} ${(r as { code?: string } | null)?.code}`))], ['paused ANALYSIS_INCONCLUSIVE']);
  await runOperation(ctx, targetResume, { name: 'all' });
  await tickThrough(c);
  const batches = new Set((await c.store.read((tx) => tx.runs.issued(t.run!.id))).map((i) => i.batch));
  assert.deepEqual([...batches].sort(), [1, 2]);
  const [j] = await c.store.read((tx) => tx.runs.judgements(t.run!.id));
  assert.deepEqual([j?.verdict, j?.resumedBy], ['inconclusive', localActor().operator]);
});
