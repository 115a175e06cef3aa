// One reason per node behind (docs/design.md §18), over planner inputs: random fleets (versions,
// holds, pins, heartbeats, clock skew, nodes that do not report the app), a run of the target
// planned by the real planner from random attempts and verdicts, and random target states
// (paused, halted, another run of the app). planTarget gives every selected node not at the
// version exactly one reason from the closed set and every node at it none; it issues (adds to
// the running run, or starts a run with) only nodes whose reason says they wait to be issued,
// and never a node at the version, held, pinned or offline.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { planRollout, type NodeFacts, type PlanInput, type RolloutPolicy } from '../../src/core/rollout-planner.js';
import { BEHIND_REASONS, planTarget, type TargetPlanInput } from '../../src/core/target-plan.js';
import { parseWindow } from '../../src/core/windows.js';
import { checkProperty } from './property-run.js';

const T0 = Date.parse('2026-06-01T01:30:00Z');
const INTERVAL = 30_000;
const V = '2.0.0';

const nodeArb = fc.record({
  reports: fc.integer({ min: 0, max: 6 }).map((x) => x > 0),
  current: fc.constantFrom('1.0.0', '1.0.0', V, '3.0.0', null),
  held: fc.integer({ min: 0, max: 5 }).map((x) => x === 0),
  pinned: fc.integer({ min: 0, max: 5 }).map((x) => x === 0),
  heartbeatAgo: fc.oneof(fc.constant(null), fc.integer({ min: 0, max: 10 * INTERVAL })),
  skewed: fc.integer({ min: 0, max: 8 }).map((x) => x === 0),
  reverted: fc.integer({ min: 0, max: 5 }).map((x) => x === 0),
  // In the target's run: not a member, frozen listing the app or not, issued (and answered how).
  member: fc.constantFrom('none', 'listed', 'unlisted'),
  issued: fc.boolean(),
  verdict: fc.constantFrom(null, 'active', 'rolled-back', 'failed', 'refused'),
  refusal: fc.constantFrom('HELD', 'WINDOW_CLOSED', 'QUARANTINED', 'UNKNOWN_APP', 'FETCH_FAILED'),
  failCode: fc.constantFrom('ROLLBACK_UNHEALTHY', 'REPLACEMENT_UNHEALTHY', 'FETCH_FAILED', null),
  fetchRetrying: fc.integer({ min: 0, max: 6 }).map((x) => x === 0),
  // Another target's running run of the app may still issue it, or has it in flight.
  elsewhere: fc.constantFrom(null, null, null, 'pending', 'issued'),
});

const scenario = fc.record({
  nodes: fc.array(nodeArb, { minLength: 0, maxLength: 14 }),
  run: fc.constantFrom('none', 'active', 'ended'),
  paused: fc.boolean(),
  halted: fc.boolean(),
  otherRun: fc.boolean(),
  runPaused: fc.boolean(),
  windows: fc.boolean(),
  allowRetryReverted: fc.boolean(),
  canaries: fc.integer({ min: 0, max: 2 }),
  batch: fc.integer({ min: 1, max: 4 }),
  elapsed: fc.integer({ min: 0, max: 60 * 60_000 }),
});

type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

const policy = (s: Scenario): RolloutPolicy => ({
  canaries: s.canaries,
  namedCanaries: [],
  canarySeed: 7,
  batch: { count: s.batch },
  bakeMs: 60_000,
  maxFailures: 2,
  failuresCarried: 0,
  maxRefused: { percent: 100 },
  maxFetchFailures: { percent: 100 },
  verdictTimeoutMs: 30 * 60_000,
  allowRetryReverted: s.allowRetryReverted,
  windows: s.windows ? [parseWindow('daily 02:00-03:00')] : [],
  tz: 'UTC',
  startAt: null,
});

// The target's input: its run planned by the real planner from the scenario's facts.
function inputOf(s: Scenario): TargetPlanInput {
  const now = T0 + s.elapsed;
  const ids = s.nodes.map((_, i) => `n-${String(i).padStart(4, '0')}`);
  const members = s.nodes.map((n, i) => ({ n, id: ids[i]! })).filter((x) => x.n.member !== 'none');
  const facts: NodeFacts[] = members.map(({ n, id }) => ({
    nodeId: id,
    lastHeartbeatAt: T0 - 1000,
    listedApp: n.member === 'listed',
    current: n.reports ? n.current : null,
    supervisor: null,
    revertedVersions: n.reverted ? [V] : [],
    clockSkewRefusedSince: n.skewed ? T0 : null,
  }));
  const issued = members.filter((x) => x.n.issued).map(({ id }, k) => ({ nodeId: id, attemptId: `a-${id}`, issuedAt: T0 + k, notAfter: null, batch: k === 0 ? 0 : k }));
  const verdicts = members
    .filter((x) => x.n.issued && x.n.verdict)
    .map(({ n, id }) => ({ nodeId: id, attemptId: `a-${id}`, outcome: n.verdict!, reasonCode: n.verdict === 'refused' ? n.refusal : n.verdict === 'active' ? null : n.failCode, at: T0 + 5000 }));
  const planInput: PlanInput = {
    run: { id: '9', app: 'web', version: V, startedAt: T0, heartbeatIntervalMs: INTERVAL, stopped: false, paused: s.runPaused, policy: policy(s) },
    nodes: facts,
    issued,
    verdicts,
    reverts: [],
    now,
  };
  const plan = planRollout(planInput);
  const active = s.run === 'active';
  return {
    name: 'prod',
    app: 'web',
    version: V,
    paused: s.paused,
    allowRetryReverted: s.allowRetryReverted,
    heartbeatIntervalMs: INTERVAL,
    activeRun: active ? { id: 9, status: plan.status, nextWindowAt: plan.nextWindowAt, startAt: null } : null,
    halted: s.run === 'ended' && s.halted ? { runId: 9, code: 'ROLLED_BACK', message: 'halted', at: now } : null,
    otherRun: s.otherRun && !active ? { id: 3, version: '1.0.0' } : null,
    nodes: s.nodes.map((n, i) => {
      const id = ids[i]!;
      const p = s.run !== 'none' ? plan.nodes[id] : undefined;
      return {
        nodeId: id,
        lastHeartbeatAt: n.heartbeatAgo === null ? null : now - n.heartbeatAgo,
        app: n.reports ? { current: n.current, held: n.held } : null,
        clockSkewRefusedSince: n.skewed ? T0 : null,
        pin: n.pinned ? { version: '1.0.0', by: 'alice', reason: 'investigating', at: T0, until: null } : null,
        revertedVersion: n.reverted,
        runs: p ? [{ runId: 9, active, plan: p, issuedAt: issued.find((x) => x.nodeId === id)?.issuedAt ?? null }] : [],
        fetchRetrying: n.fetchRetrying ? { since: T0, message: 'retrying the download' } : null,
        analysisPending: null,
        elsewhere: n.elsewhere ? { runId: 4, version: '1.0.0', state: n.elsewhere as 'pending' | 'issued', target: 'other' } : null,
      };
    }),
    unselectedPending: [],
    now,
  };
}

const WAITING = new Set(['waiting-batch', 'waiting-window', 'paused']);

test('every selected node not at the version has exactly one reason from the closed set, a node at it none, and only waiting nodes are issued', async () => {
  await checkProperty(
    'target reasons',
    fc.property(scenario, (s) => {
      const input = inputOf(s);
      const out = planTarget(input);
      assert.deepEqual(planTarget(input), out, 'pure: the same input plans the same');
      assert.deepEqual(out.nodes.map((n) => n.nodeId), input.nodes.map((n) => n.nodeId), 'one entry per selected node, in order');
      const issuedNow = new Set([...(out.start ?? []), ...out.refreeze.filter((r) => r.listedApp).map((r) => r.nodeId)]);
      for (const [i, n] of out.nodes.entries()) {
        const facts = input.nodes[i]!;
        const atV = facts.app?.current === V;
        if (atV) {
          assert.equal(n.state, 'current');
          assert.equal(n.reason, null, `${n.nodeId} runs the version: no reason`);
          assert.ok(!issuedNow.has(n.nodeId), 'a node at the version is never issued');
          continue;
        }
        assert.equal(n.state, 'behind');
        assert.ok(n.reason !== null, `${n.nodeId} is behind: one reason`);
        assert.ok((BEHIND_REASONS as readonly string[]).includes(n.reason.reason), `${n.reason.reason} is in the closed set`);
        if (issuedNow.has(n.nodeId)) {
          assert.ok(WAITING.has(n.reason.reason), `${n.nodeId} is issued only while it waits to be (${n.reason.reason})`);
          assert.ok(!facts.app?.held && !facts.pin, 'never a held or pinned node');
          assert.ok(!facts.elsewhere, 'never a node another target\'s run may still issue or has in flight');
        }
      }
      if (out.start) {
        assert.equal(input.activeRun, null, 'a run starts only when the target has none running');
        assert.equal(input.otherRun, null, 'nor while a one-shot run of the app runs');
        assert.ok(!input.paused && !input.halted, 'nor while paused or halted');
      }
      if (!input.activeRun) assert.deepEqual(out.refreeze, [], 'nothing to refreeze without a running run');
    }),
    3000,
  );
});
