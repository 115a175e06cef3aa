// Properties of the rollout planner (docs/design.md §11), over random fleets, selectors, policies and
// node behaviours played on a fake clock, as the control plane plays them: for any of them no
// node outside the targets is ever issued, no batch exceeds its size, a run never ends
// `succeeded` with a failure beyond its budget, and no attempt is issued outside a window or
// without its window's end as notAfter (so no helper can be handed one after it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { planRollout, type Issued, type NodeFacts, type Plan, type RevertFact, type RolloutPolicy, type RolloutRun, type VerdictFact } from '../../src/core/rollout-planner.js';
import { matchesSelector, parseSelector } from '../../src/core/selector.js';
import { parseWindow, windowAt } from '../../src/core/windows.js';
import { checkProperty } from './property-run.js';

const T0 = Date.parse('2026-03-28T20:00:00Z'); // the evening before Paris's spring DST change
const MIN = 60_000;
const HB = 30_000;

interface SimNode {
  env: 'prod' | 'staging' | null;
  listedApp: boolean;
  stale: boolean;
  current: 'old' | 'new' | null;
  revertedBefore: boolean;
  // What it does with an attempt: answer after `delay` minutes with `outcome`, or never.
  delay: number;
  outcome: 'active' | 'rolled-back' | 'failed' | 'silent' | 'HELD' | 'QUARANTINED' | 'WINDOW_CLOSED' | 'INTEGRITY_MISMATCH' | 'ROLLBACK_UNHEALTHY';
  // After confirming: a revert or a supervisor error `after` minutes later, if any.
  later: { after: number; kind: 'revert' | 'supervisor' } | null;
}

const simNode: fc.Arbitrary<SimNode> = fc.record({
  env: fc.constantFrom('prod' as const, 'staging' as const, null),
  listedApp: fc.integer({ min: 0, max: 9 }).map((x) => x > 0),
  stale: fc.integer({ min: 0, max: 9 }).map((x) => x === 0),
  current: fc.constantFrom('old' as const, 'old' as const, 'old' as const, 'new' as const, null),
  revertedBefore: fc.integer({ min: 0, max: 9 }).map((x) => x === 0),
  delay: fc.integer({ min: 0, max: 12 }),
  outcome: fc.constantFrom('active', 'active', 'active', 'active', 'rolled-back', 'failed', 'silent', 'HELD', 'QUARANTINED', 'WINDOW_CLOSED', 'INTEGRITY_MISMATCH', 'ROLLBACK_UNHEALTHY') as fc.Arbitrary<SimNode['outcome']>,
  later: fc.option(fc.record({ after: fc.integer({ min: 0, max: 8 }), kind: fc.constantFrom('revert' as const, 'supervisor' as const) }), { freq: 4 }),
});

const amount = (min: number) => fc.oneof(fc.integer({ min: Math.max(min, 0), max: 6 }).map((count) => ({ count: Math.max(count, min) })), fc.integer({ min: Math.max(min, 1), max: 100 }).map((percent) => ({ percent })));

const scenario = fc.record({
  nodes: fc.array(simNode, { maxLength: 16 }),
  selector: fc.constantFrom('', 'env=prod', 'env!=prod', 'env in (prod,staging)', '!env'),
  canaries: fc.integer({ min: 0, max: 3 }),
  named: fc.array(fc.integer({ min: 0, max: 15 }), { maxLength: 2 }),
  seed: fc.nat(),
  batch: amount(1),
  bakeMin: fc.integer({ min: 0, max: 4 }),
  maxFailures: fc.integer({ min: 0, max: 3 }),
  failuresCarried: fc.integer({ min: 0, max: 2 }),
  maxRefused: amount(0),
  timeoutMin: fc.integer({ min: 5, max: 40 }),
  window: fc.option(fc.record({ start: fc.integer({ min: 0, max: 23 }), hours: fc.integer({ min: 1, max: 5 }), tz: fc.constantFrom('UTC', 'Europe/Paris') }), { freq: 2 }),
  startInMin: fc.option(fc.integer({ min: 0, max: 90 }), { freq: 3 }),
  pauses: fc.array(fc.integer({ min: 0, max: 300 }), { maxLength: 4 }),
});

type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

const id = (i: number) => `n${String(i).padStart(2, '0')}`;

// Plays a scenario for up to 10 hours in steps of a minute, checking the properties at each plan.
function play(sc: Scenario): void {
  const sel = parseSelector(sc.selector);
  const all = sc.nodes.map((n, i) => ({ ...n, nodeId: id(i) }));
  // What the control plane hands the planner: the enrolled nodes the selector matches.
  const selected = all.filter((n) => matchesSelector(sel, n.env ? { env: n.env } : {}));
  const targets = new Set(selected.filter((n) => n.listedApp && !n.stale).map((n) => n.nodeId));
  const windows = sc.window ? [parseWindow(`daily ${String(sc.window.start).padStart(2, '0')}:00-${String((sc.window.start + sc.window.hours) % 24).padStart(2, '0')}:00`)] : [];
  const tz = sc.window?.tz ?? 'UTC';
  const policy: RolloutPolicy = {
    canaries: sc.canaries,
    namedCanaries: [...new Set(sc.named.filter((i) => i < all.length).map(id))],
    canarySeed: sc.seed,
    batch: sc.batch,
    bakeMs: sc.bakeMin * MIN,
    maxFailures: sc.maxFailures,
    failuresCarried: sc.failuresCarried,
    maxRefused: sc.maxRefused,
    maxFetchFailures: { percent: 100 },
    verdictTimeoutMs: sc.timeoutMin * MIN,
    allowRetryReverted: false,
    windows,
    tz,
    startAt: sc.startInMin === null ? null : T0 + sc.startInMin * MIN,
  };
  let run: RolloutRun = { id: 'r', app: 'web', version: '2.0.0', startedAt: T0, heartbeatIntervalMs: HB, stopped: false, paused: false, policy };
  const facts: NodeFacts[] = selected.map((n) => ({
    nodeId: n.nodeId,
    lastHeartbeatAt: n.stale ? T0 - 10 * HB : T0 - 1000,
    listedApp: n.listedApp,
    current: n.current === 'old' ? '1.0.0' : n.current === 'new' ? '2.0.0' : null,
    supervisor: { state: 'running', since: T0 - MIN },
    revertedVersions: n.revertedBefore ? ['2.0.0'] : [],
    clockSkewRefusedSince: null,
  }));
  const issued: Issued[] = [];
  const verdicts: VerdictFact[] = [];
  const reverts: RevertFact[] = [];
  let plan: Plan | null = null;
  for (let step = 0; step < 600; step++) {
    const now = T0 + step * MIN;
    if (sc.pauses.includes(step)) run = { ...run, paused: !run.paused };
    for (const i of issued) {
      const n = all.find((x) => x.nodeId === i.nodeId)!;
      const at = i.issuedAt + n.delay * MIN;
      if (at !== now || n.outcome === 'silent') continue;
      const outcome = n.outcome === 'active' || n.outcome === 'rolled-back' || n.outcome === 'failed' ? n.outcome : n.outcome === 'ROLLBACK_UNHEALTHY' ? 'failed' : 'refused';
      verdicts.push({ nodeId: n.nodeId, attemptId: i.attemptId, outcome, reasonCode: outcome === 'active' ? null : n.outcome === 'rolled-back' ? 'REPLACEMENT_UNHEALTHY' : n.outcome === 'failed' ? 'STAGE_FAILED' : n.outcome, at: now });
      if (outcome === 'active' && n.later) {
        const lat = now + n.later.after * MIN;
        if (n.later.kind === 'revert') reverts.push({ nodeId: n.nodeId, attemptId: `op-${n.nodeId}`, outcome: 'rolled-back', reasonCode: 'REPLACEMENT_UNHEALTHY', at: lat });
        else {
          const f = facts.find((x) => x.nodeId === n.nodeId)!;
          f.supervisor = { state: 'error', since: lat };
        }
      }
    }
    // Facts only as they are known now.
    const input = { run, nodes: facts.map((f) => ({ ...f, supervisor: f.supervisor && f.supervisor.since !== null && f.supervisor.since > now ? { state: 'running', since: T0 - MIN } : f.supervisor })), issued: [...issued], verdicts: verdicts.filter((v) => v.at <= now), reverts: reverts.filter((r) => r.at <= now), now };
    plan = planRollout(input);
    const where = `step ${step}`;
    if (plan.issue) {
      for (const nodeId of plan.issue.nodes) {
        assert.ok(targets.has(nodeId), `${where}: ${nodeId} is issued but is not a target`);
        assert.ok(!issued.some((x) => x.nodeId === nodeId), `${where}: ${nodeId} issued twice`);
      }
      const w = windowAt(windows, tz, now);
      assert.ok(w.open, `${where}: issued outside every window`);
      assert.equal(plan.issue.notAfter, w.end, `${where}: notAfter is the end of the window it was issued in`);
      assert.ok(plan.issue.notAfter === null || now < plan.issue.notAfter, `${where}: issued at or after its notAfter`);
      assert.ok(policy.startAt === null || now >= policy.startAt, `${where}: issued before --start-at`);
      assert.ok(!run.paused, `${where}: issued while paused`);
      for (const nodeId of plan.issue.nodes) issued.push({ nodeId, attemptId: `a-${nodeId}`, issuedAt: now, notAfter: plan.issue.notAfter, batch: plan.issue.batch });
      if (plan.issue.batch > 0) assert.ok(issued.filter((x) => x.batch === plan!.issue!.batch).length <= plan.batchSize, `${where}: batch ${plan.issue.batch} over its size ${plan.batchSize}`);
      plan = planRollout({ ...input, issued: [...issued] });
    }
    const canaryLive = Object.values(plan.nodes).filter((n) => n.batch === 0 && (n.state === 'issued' || n.state === 'confirmed')).length;
    assert.ok(canaryLive <= plan.canaryCount, `${where}: ${canaryLive} canaries in flight or confirmed, more than ${plan.canaryCount}`);
    if (plan.status === 'succeeded') {
      const failedOf = (batch: (b: number) => boolean) => Object.values(plan!.nodes).filter((n) => n.batch !== null && batch(n.batch) && (n.state === 'reverted' || n.state === 'timed-out')).length;
      assert.equal(failedOf((b) => b === 0), 0, `${where}: succeeded with a failed canary`);
      const failures = failedOf((b) => b > 0);
      assert.ok(failures === 0 || policy.failuresCarried + failures <= policy.maxFailures, `${where}: succeeded with ${failures} failures (${policy.failuresCarried} carried) over a budget of ${policy.maxFailures}`);
      assert.ok(Object.values(plan.nodes).every((n) => n.state !== 'refused' || !['INTEGRITY_MISMATCH'].includes(n.reason ?? '')), `${where}: succeeded over a release problem`);
    }
    if (plan.status === 'succeeded' || plan.status === 'halted') break;
  }
}

test('for any fleet, selector and policy, the planner issues only targets, keeps batches to their size, never succeeds beyond its budget and never issues outside a window', async () => {
  await checkProperty('rollout planner', fc.property(scenario, (sc) => play(sc)), 300);
});
