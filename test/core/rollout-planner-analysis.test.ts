// The pure planner's side of the automated analysis (docs/design.md §19), on a fake clock: which steps
// are analysed and when they are due, what enforce waits for, halts and pauses on, what observe and
// off leave alone, and a dry run that plays the waits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planRollout, type AnalysisFacts, type Issued, type NodeFacts, type Plan, type PlanInput, type RolloutPolicy, type StepJudgementFact, type VerdictFact } from '../../src/core/rollout-planner.js';
import { simulateRollout } from '../../src/core/rollout-simulate.js';

const T0 = 1_700_000_000_000;
const min = 60_000;
const W = 10 * min;

const policy = (over: Partial<RolloutPolicy> = {}): RolloutPolicy => ({
  canaries: 1, namedCanaries: [], canarySeed: 7, batch: { count: 2 }, bakeMs: 0, maxFailures: 0, failuresCarried: 0, maxRefused: { percent: 100 },
  maxFetchFailures: { percent: 100 }, verdictTimeoutMs: 30 * min, allowRetryReverted: false, windows: [], tz: 'UTC', startAt: null, ...over,
});
const node = (nodeId: string): NodeFacts => ({ nodeId, lastHeartbeatAt: T0 - 10_000, listedApp: true, current: '1.1.0', supervisor: { state: 'running', since: T0 - 3_600_000 }, revertedVersions: [], clockSkewRefusedSince: null });

// A run of five nodes (n1..n5): one canary, then batches of two, as the control plane plays it:
// every node it issues confirms `confirmAfter` later.
class Sim {
  issued: Issued[] = [];
  verdicts: VerdictFact[] = [];
  judgements: StepJudgementFact[] = [];
  paused = false;
  constructor(readonly mode: AnalysisFacts['mode'], readonly over: Partial<RolloutPolicy> = {}) {}
  input(now: number): PlanInput {
    return {
      run: { id: 'r1', app: 'web', version: '1.2.0', startedAt: T0, heartbeatIntervalMs: 30_000, stopped: false, paused: this.paused, policy: policy(this.over) },
      nodes: ['n1', 'n2', 'n3', 'n4', 'n5'].map(node),
      issued: this.issued,
      verdicts: this.verdicts,
      reverts: [],
      now,
      analysis: { mode: this.mode, windowMs: W, judgements: this.judgements },
    };
  }
  // Plans at `now`, records what it issues, and confirms it at `now + 1 min`.
  step(now: number): Plan {
    const plan = planRollout(this.input(now));
    if (plan.issue) {
      for (const id of plan.issue.nodes) {
        const attemptId = `a-${id}`;
        this.issued.push({ nodeId: id, attemptId, issuedAt: now, notAfter: null, batch: plan.issue.batch });
        this.verdicts.push({ nodeId: id, attemptId, outcome: 'active', reasonCode: null, at: now + min });
      }
    }
    return plan;
  }
  judge(step: number, verdict: StepJudgementFact['verdict'], at: number, summary = `${verdict}: restart-rate: canary 4.00/h (2 nodes) vs baseline 0.10/h (2 nodes)`): void {
    this.judgements.push({ step, verdict, at, summary, resumed: false });
  }
}

test('enforce: the next step waits for the last step\'s window to pass and its judgement, which the plan asks for', () => {
  const sim = new Sim('enforce');
  const first = sim.step(T0);
  assert.deepEqual(first.issue?.nodes.length, 1);
  const canary = first.issue!.nodes[0]!;
  // Confirmed at T0 + 1 min: the window runs to T0 + 11 min.
  const during = sim.step(T0 + 5 * min);
  assert.equal(during.issue, null);
  assert.equal(during.status, 'running');
  assert.deepEqual(during.analysisWait, { step: 0, from: T0 + min, until: T0 + min + W });
  assert.deepEqual(during.analysisDue, []);
  assert.equal(during.wakeAt, T0 + min + W);
  const due = sim.step(T0 + min + W);
  assert.equal(due.issue, null, 'nothing goes before the judgement');
  assert.equal(due.analysisDue.length, 1);
  assert.equal(due.analysisDue[0]!.step, 0);
  assert.deepEqual(due.analysisDue[0]!.canary, [canary]);
  assert.deepEqual(due.analysisDue[0]!.baseline, ['n1', 'n2', 'n3', 'n4', 'n5'].filter((n) => n !== canary), 'the baseline: the run\'s nodes still pending on the old version');
  assert.deepEqual([due.analysisDue[0]!.from, due.analysisDue[0]!.to], [T0 + min, T0 + min + W]);
  sim.judge(0, 'pass', T0 + min + W);
  const next = sim.step(T0 + min + W);
  assert.equal(next.issue?.batch, 1);
  assert.equal(next.analysisWait, null);
});

test('enforce: a failing judgement halts ANALYSIS_FAILED with its summary, before the next step', () => {
  const sim = new Sim('enforce');
  sim.step(T0);
  sim.judge(0, 'fail', T0 + min + W);
  const plan = sim.step(T0 + min + W);
  assert.equal(plan.status, 'halted');
  assert.equal(plan.issue, null);
  assert.equal(plan.haltReason?.code, 'ANALYSIS_FAILED');
  assert.match(plan.haltReason!.message, /the analysis of the canaries of web 1\.2\.0 failed: fail: restart-rate: canary 4\.00\/h \(2 nodes\) vs baseline 0\.10\/h/);
  assert.deepEqual(plan.analysisDue, []);
});

test('enforce: an inconclusive judgement pauses ANALYSIS_INCONCLUSIVE until an operator resumes; then the next step goes', () => {
  const sim = new Sim('enforce');
  sim.step(T0);
  sim.judge(0, 'inconclusive', T0 + min + W, 'inconclusive: error-ratio: no data');
  const paused = sim.step(T0 + min + W);
  assert.equal(paused.status, 'paused');
  assert.equal(paused.issue, null);
  assert.equal(paused.pauseReason?.code, 'ANALYSIS_INCONCLUSIVE');
  assert.match(paused.pauseReason!.message, /`rollout resume web` \(or `target resume` of its target\) issues the next step/);
  // Still paused an hour later: an inconclusive never passes by itself.
  assert.equal(sim.step(T0 + 2 * 3_600_000).status, 'paused');
  sim.judgements[0] = { ...sim.judgements[0]!, resumed: true };
  const resumed = sim.step(T0 + 2 * 3_600_000);
  assert.equal(resumed.status, 'running');
  assert.equal(resumed.issue?.batch, 1);
  assert.equal(resumed.pauseReason, undefined);
});

test('enforce: every step with a step after it is judged; the last one is not (nothing is left to hold back)', () => {
  const sim = new Sim('enforce');
  let t = T0;
  const judgedSteps: number[] = [];
  for (let i = 0; i < 40; i++) {
    const plan = sim.step(t);
    for (const d of plan.analysisDue) {
      judgedSteps.push(d.step);
      sim.judge(d.step, 'pass', t);
    }
    if (plan.status === 'succeeded') break;
    t += min;
  }
  assert.equal(planRollout(sim.input(t)).status, 'succeeded');
  // Five nodes: the canary, batch 1 (2 nodes), batch 2 (2 nodes, the last).
  assert.deepEqual(judgedSteps, [0, 1]);
  // Each step waited for its window: batch 2 went after two windows and their confirmations.
  const batch2 = sim.issued.find((i) => i.batch === 2)!;
  assert.ok(batch2.issuedAt >= T0 + 2 * (min + W), `batch 2 at +${(batch2.issuedAt - T0) / min} min`);
});

test('observe: nothing waits, a failing judgement halts nothing, and the steps are still due for judging', () => {
  const sim = new Sim('observe');
  sim.step(T0);
  const early = sim.step(T0 + min);
  assert.equal(early.issue?.batch, 1, 'observe issues the next step without waiting for a window');
  assert.equal(early.analysisWait, null);
  // The canary step's window passes while batch 1 bakes.
  const plan = sim.step(T0 + min + W);
  assert.deepEqual(plan.analysisDue.map((d) => d.step), [0]);
  sim.judge(0, 'fail', T0 + min + W);
  sim.judge(1, 'inconclusive', T0 + min + W);
  const after = sim.step(T0 + min + W);
  assert.notEqual(after.status, 'halted');
  assert.notEqual(after.status, 'paused');
  assert.equal(after.haltReason, undefined);
  assert.equal(after.pauseReason, undefined);
});

test('off: no step is analysed, due or waited for', () => {
  const sim = new Sim('off');
  sim.step(T0);
  const plan = sim.step(T0 + min + W);
  assert.deepEqual(plan.analysisSteps, []);
  assert.deepEqual(plan.analysisDue, []);
  assert.equal(plan.issue?.batch, 1);
});

test('a bake longer than the window: the next step waits for both; a step with no confirmation is not judged', () => {
  const sim = new Sim('enforce', { bakeMs: 30 * min });
  sim.step(T0);
  sim.judge(0, 'pass', T0 + min + W);
  const baking = sim.step(T0 + min + W);
  assert.equal(baking.issue, null);
  assert.equal(baking.bakeUntil, T0 + min + 30 * min);
  assert.equal(sim.step(T0 + 31 * min).issue?.batch, 1);

  // Every canary refused: nothing runs the new version, nothing to judge.
  const none = new Sim('enforce', { canaries: 1, maxRefused: { percent: 100 } });
  const first = none.step(T0);
  none.verdicts = [{ nodeId: first.issue!.nodes[0]!, attemptId: `a-${first.issue!.nodes[0]}`, outcome: 'refused', reasonCode: 'HELD', at: T0 + 1000 }];
  const later = planRollout(none.input(T0 + 2 * W));
  assert.deepEqual(later.analysisSteps, []);
});

test('the dry run plays an enforced analysis as a wait of one window per step, each judged a pass', () => {
  const sim = new Sim('enforce');
  const s = simulateRollout(sim.input(T0));
  assert.equal(s.status, 'succeeded');
  assert.deepEqual(s.batches.map((b) => [b.batch, b.at - T0]), [[0, 0], [1, W], [2, 2 * W]]);
});
