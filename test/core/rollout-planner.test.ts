// The rollout planner (docs/design.md §9, §11), table-tested on a fake clock: each case plays steps as
// the control plane would (record the receipts, plan, record what the plan issues) and checks
// every plan against its row.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planRollout, retryNodes, type Issued, type NodeFacts, type Plan, type RevertFact, type RolloutPolicy, type RolloutRun, type VerdictFact } from '../../src/core/rollout-planner.js';
import { pickCanaries } from '../../src/core/rollout-policy.js';
import { HOST_TRUST_CODES, RELEASE_PROBLEM_CODES } from '../../src/core/errors.js';
import { parseWindow } from '../../src/core/windows.js';

// Every time is ms on a fake clock; the run starts at T0 (2023-11-14T22:13:20Z, a Tuesday).
const T0 = 1_700_000_000_000;
const s = 1_000;
const min = 60 * s;
const h = 60 * min;

const policy = (over: Partial<RolloutPolicy> = {}): RolloutPolicy => ({
  canaries: 1,
  namedCanaries: [],
  canarySeed: 7,
  batch: { count: 2 },
  bakeMs: 0,
  maxFailures: 0,
  failuresCarried: 0,
  maxRefused: { percent: 100 },
  maxFetchFailures: { percent: 100 },
  verdictTimeoutMs: 30 * min,
  allowRetryReverted: false,
  windows: [],
  tz: 'UTC',
  startAt: null,
  ...over,
});

const run = (over: Partial<RolloutPolicy> = {}, r: Partial<RolloutRun> = {}): RolloutRun => ({
  id: 'r1', app: 'web', version: '1.2.0', startedAt: T0, heartbeatIntervalMs: 30 * s, stopped: false, paused: false, policy: policy(over), ...r,
});

// A node that heartbeat 10 s before the run started, listed web and runs 1.1.0.
const node = (nodeId: string, over: Partial<NodeFacts> = {}): NodeFacts => ({
  nodeId, lastHeartbeatAt: T0 - 10 * s, listedApp: true, current: '1.1.0', supervisor: { state: 'running', since: T0 - h }, revertedVersions: [], clockSkewRefusedSince: null, ...over,
});
const fleet = (...ids: string[]): NodeFacts[] => ids.map((id) => node(id));

// A receipt arriving at a step, for the attempt this run issued the node (or `attemptId`).
interface Receipt {
  node: string;
  outcome: VerdictFact['outcome'];
  code?: string;
  attemptId?: string;
}
const ok = (n: string): Receipt => ({ node: n, outcome: 'active' });
const rolledBack = (n: string, code = 'REPLACEMENT_UNHEALTHY'): Receipt => ({ node: n, outcome: 'rolled-back', code });
const failed = (n: string, code = 'ROLLBACK_UNHEALTHY'): Receipt => ({ node: n, outcome: 'failed', code });
const refused = (n: string, code: string): Receipt => ({ node: n, outcome: 'refused', code });

interface Expected {
  status: Plan['status'];
  // "n1:confirmed n2:pending ..." for every node.
  nodes: string;
  // The nodes issued now (in order), and their batch.
  issue?: string[];
  batch?: number;
  halt?: { code: string; nodeId: string };
  notAfter?: number | null;
  nextWindowAt?: number | null;
  failures?: number;
  canaries?: string[];
}

interface Step {
  at: number;
  receipts?: Receipt[];
  // A later rolled-back or failed receipt of another attempt (an operator's, say).
  reverts?: Array<{ node: string; outcome: 'rolled-back' | 'failed'; code: string }>;
  // Facts that change at this step (the node's report now).
  facts?: Record<string, Partial<NodeFacts>>;
  run?: Partial<RolloutRun>;
  expect: Expected;
}

interface Case {
  name: string;
  run: RolloutRun;
  nodes: NodeFacts[];
  steps: Step[];
}

const compact = (p: Plan) => Object.keys(p.nodes).sort().map((id) => `${id}:${p.nodes[id]!.state}`).join(' ');

// Plays the steps, checking each plan, and the invariants every plan keeps: the same facts give
// the same plan; a node this run issued is never issued again; a batch is never bigger than its
// size; an issue is never past its window.
function play(c: Case): { plan: Plan; issued: Issued[]; verdicts: VerdictFact[] } {
  let r = c.run;
  let nodes = c.nodes;
  const issued: Issued[] = [];
  const verdicts: VerdictFact[] = [];
  const reverts: RevertFact[] = [];
  let plan: Plan | null = null;
  for (const [i, step] of c.steps.entries()) {
    const where = `${c.name}, step ${i + 1} (T0${step.at >= T0 ? '+' : ''}${(step.at - T0) / s}s)`;
    if (step.run) r = { ...r, ...step.run };
    if (step.facts) nodes = nodes.map((n) => ({ ...n, ...(step.facts![n.nodeId] ?? {}) }));
    for (const rc of step.receipts ?? []) {
      const attemptId = rc.attemptId ?? issued.find((x) => x.nodeId === rc.node)?.attemptId;
      assert.ok(attemptId, `${where}: the table sends a receipt for ${rc.node}, which was never issued`);
      verdicts.push({ nodeId: rc.node, attemptId, outcome: rc.outcome, reasonCode: rc.code ?? null, at: step.at });
    }
    for (const rv of step.reverts ?? []) reverts.push({ nodeId: rv.node, attemptId: `manual-${rv.node}`, outcome: rv.outcome, reasonCode: rv.code, at: step.at });
    const input = { run: r, nodes, issued: [...issued], verdicts: [...verdicts], reverts: [...reverts], now: step.at };
    plan = planRollout(input);
    assert.deepEqual(planRollout(input), plan, `${where}: the same facts give the same plan`);
    const e = step.expect;
    assert.equal(plan.status, e.status, `${where}: status`);
    assert.equal(compact(plan), e.nodes, `${where}: nodes`);
    assert.deepEqual(plan.issue?.nodes ?? [], e.issue ?? [], `${where}: issue`);
    if (e.batch !== undefined) assert.equal(plan.issue?.batch, e.batch, `${where}: batch`);
    if (e.notAfter !== undefined) assert.equal(plan.issue?.notAfter ?? null, e.notAfter, `${where}: notAfter`);
    if (e.nextWindowAt !== undefined) assert.equal(plan.nextWindowAt, e.nextWindowAt, `${where}: nextWindowAt`);
    if (e.failures !== undefined) assert.equal(plan.failures, e.failures, `${where}: failures`);
    if (e.canaries !== undefined) assert.deepEqual(plan.canaries, e.canaries, `${where}: canaries`);
    assert.deepEqual(plan.haltReason ? { code: plan.haltReason.code, nodeId: plan.haltReason.nodeId } : undefined, e.halt, `${where}: halt`);
    if (plan.haltReason) assert.match(plan.haltReason.message, /web 1\.2\.0/, `${where}: message`);
    if (plan.issue) {
      for (const id of plan.issue.nodes) assert.ok(!issued.some((x) => x.nodeId === id), `${where}: ${id} was already issued in this run`);
      assert.ok(plan.issue.batch === 0 || plan.issue.nodes.length <= plan.batchSize, `${where}: a batch within its size`);
      assert.ok(plan.issue.notAfter === null || step.at < plan.issue.notAfter, `${where}: issued inside its window`);
      for (const id of plan.issue.nodes) issued.push({ nodeId: id, attemptId: `${r.id}/${id}`, issuedAt: step.at, notAfter: plan.issue.notAfter, batch: plan.issue.batch });
    }
  }
  assert.ok(plan);
  return { plan, issued, verdicts };
}

// The canary after n1 refused: the seeded pick among the others.
const NEXT_CANARY = pickCanaries(['n2', 'n3', 'n4'], [], 7, 1)[0]!;

const cases: Case[] = [
  {
    name: 'a random canary, chosen by the seed, goes first',
    run: run(),
    nodes: fleet('n5', 'n3', 'n1', 'n4', 'n2'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending n3:pending n4:pending n5:pending', issue: [pickCanaries(['n1', 'n2', 'n3', 'n4', 'n5'], [], 7, 1)[0]!], batch: 0 } },
    ],
  },
  {
    name: 'named canaries go first, then batches in nodeId order; a refused node does not refill its batch',
    run: run({ namedCanaries: ['n3'] }),
    nodes: fleet('n1', 'n2', 'n3', 'n4', 'n5'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending n3:pending n4:pending n5:pending', issue: ['n3'], batch: 0 } },
      { at: T0 + 1 * min, expect: { status: 'running', nodes: 'n1:pending n2:pending n3:issued n4:pending n5:pending' } },
      { at: T0 + 2 * min, receipts: [ok('n3')], expect: { status: 'running', nodes: 'n1:pending n2:pending n3:confirmed n4:pending n5:pending', issue: ['n1', 'n2'], batch: 1, canaries: ['n3'] } },
      { at: T0 + 3 * min, receipts: [refused('n1', 'HELD')], expect: { status: 'running', nodes: 'n1:refused n2:issued n3:confirmed n4:pending n5:pending' } },
      { at: T0 + 4 * min, receipts: [ok('n2')], expect: { status: 'running', nodes: 'n1:refused n2:confirmed n3:confirmed n4:pending n5:pending', issue: ['n4', 'n5'], batch: 2 } },
      { at: T0 + 5 * min, receipts: [ok('n4'), ok('n5')], expect: { status: 'succeeded', nodes: 'n1:refused n2:confirmed n3:confirmed n4:confirmed n5:confirmed' } },
    ],
  },
  {
    name: 'two canaries chosen by the seed go together; the same seed always picks the same ones',
    run: run({ canaries: 2, canarySeed: 12345 }),
    nodes: fleet('a', 'b', 'c', 'd', 'e', 'f'),
    steps: [{ at: T0, expect: { status: 'running', nodes: 'a:pending b:pending c:pending d:pending e:pending f:pending', issue: pickCanaries(['a', 'b', 'c', 'd', 'e', 'f'], [], 12345, 2), batch: 0 } }],
  },
  {
    name: 'a canary refusing hands the role to the next node; the batches wait for a confirmed canary',
    run: run({ namedCanaries: ['n1'] }),
    nodes: fleet('n1', 'n2', 'n3', 'n4'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending n3:pending n4:pending', issue: ['n1'], batch: 0 } },
      { at: T0 + 1 * min, receipts: [refused('n1', 'QUARANTINED')], expect: { status: 'running', nodes: 'n1:refused n2:pending n3:pending n4:pending', issue: [NEXT_CANARY], batch: 0, canaries: [] } },
      { at: T0 + 2 * min, receipts: [ok(NEXT_CANARY)], expect: { status: 'running', nodes: `n1:refused ${['n2', 'n3', 'n4'].map((n) => `${n}:${n === NEXT_CANARY ? 'confirmed' : 'pending'}`).join(' ')}`, issue: ['n2', 'n3', 'n4'].filter((n) => n !== NEXT_CANARY), batch: 1, canaries: [NEXT_CANARY] } },
    ],
  },
  {
    name: 'a canary that rolls back halts the run before any other node is touched, whatever the budget',
    run: run({ maxFailures: 5, namedCanaries: ['n1'] }),
    nodes: fleet('n1', 'n2', 'n3'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending n3:pending', issue: ['n1'] } },
      { at: T0 + 2 * min, receipts: [rolledBack('n1')], expect: { status: 'halted', nodes: 'n1:reverted n2:pending n3:pending', halt: { code: 'REPLACEMENT_UNHEALTHY', nodeId: 'n1' } } },
      { at: T0 + 60 * min, expect: { status: 'halted', nodes: 'n1:reverted n2:pending n3:pending', halt: { code: 'REPLACEMENT_UNHEALTHY', nodeId: 'n1' } } },
    ],
  },
  {
    // docs/design.md §18: a download that fails is the node's trouble, not the release's.
    name: 'a canary that cannot fetch the release is failed, counted in the budget, and hands its role on',
    run: run({ namedCanaries: ['n1'], maxFailures: 1 }),
    nodes: fleet('n1', 'n2', 'n3', 'n4'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending n3:pending n4:pending', issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [refused('n1', 'FETCH_FAILED')], expect: { status: 'running', nodes: 'n1:failed n2:pending n3:pending n4:pending', issue: [NEXT_CANARY], batch: 0, canaries: [], failures: 1 } },
    ],
  },
  {
    name: 'a node of a batch that cannot fetch is a failure within the budget, and the run goes on to succeed',
    run: run({ namedCanaries: ['n1'], batch: { count: 2 }, maxFailures: 1, maxFetchFailures: { percent: 50 } }),
    nodes: fleet('n1', 'n2', 'n3', 'n4'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending n3:pending n4:pending', issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], expect: { status: 'running', nodes: 'n1:confirmed n2:pending n3:pending n4:pending', issue: ['n2', 'n3'], batch: 1 } },
      { at: T0 + 2 * min, receipts: [refused('n2', 'FETCH_FAILED'), ok('n3')], expect: { status: 'running', nodes: 'n1:confirmed n2:failed n3:confirmed n4:pending', issue: ['n4'], batch: 2, failures: 1 } },
      { at: T0 + 3 * min, receipts: [ok('n4')], expect: { status: 'succeeded', nodes: 'n1:confirmed n2:failed n3:confirmed n4:confirmed', failures: 1 } },
    ],
  },
  {
    name: 'a fetch failure beyond the budget halts the run like a revert (the default budget is 0)',
    run: run({ namedCanaries: ['n1'], batch: { count: 2 } }),
    nodes: fleet('n1', 'n2', 'n3'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending n3:pending', issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], expect: { status: 'running', nodes: 'n1:confirmed n2:pending n3:pending', issue: ['n2', 'n3'], batch: 1 } },
      // A `failed` receipt with FETCH_FAILED counts the same as the `refused` every helper sends.
      { at: T0 + 2 * min, receipts: [failed('n2', 'FETCH_FAILED')], expect: { status: 'halted', nodes: 'n1:confirmed n2:failed n3:issued', failures: 1, halt: { code: 'FETCH_FAILED', nodeId: 'n2' } } },
    ],
  },
  {
    name: 'more of a batch than --max-fetch-failures cannot fetch: the run halts TOO_MANY_FETCH_FAILURES, within the failure budget',
    run: run({ namedCanaries: ['n1'], batch: { count: 4 }, maxFailures: 10, maxFetchFailures: { percent: 25 } }),
    nodes: fleet('n1', 'n2', 'n3', 'n4', 'n5'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending n3:pending n4:pending n5:pending', issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], expect: { status: 'running', nodes: 'n1:confirmed n2:pending n3:pending n4:pending n5:pending', issue: ['n2', 'n3', 'n4', 'n5'], batch: 1 } },
      { at: T0 + 2 * min, receipts: [refused('n2', 'FETCH_FAILED')], expect: { status: 'running', nodes: 'n1:confirmed n2:failed n3:issued n4:issued n5:issued', failures: 1 } },
      { at: T0 + 3 * min, receipts: [refused('n3', 'FETCH_FAILED')], expect: { status: 'halted', nodes: 'n1:confirmed n2:failed n3:failed n4:issued n5:issued', failures: 2, halt: { code: 'TOO_MANY_FETCH_FAILURES', nodeId: 'n3' } } },
    ],
  },
  {
    name: 'a budget reached by the last node of a batch halts the run at that verdict',
    run: run({ namedCanaries: ['n1'], batch: { count: 3 }, maxFailures: 1 }),
    nodes: fleet('n1', 'n2', 'n3', 'n4', 'n5'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending n3:pending n4:pending n5:pending', issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], expect: { status: 'running', nodes: 'n1:confirmed n2:pending n3:pending n4:pending n5:pending', issue: ['n2', 'n3', 'n4'], batch: 1 } },
      { at: T0 + 2 * min, receipts: [rolledBack('n2'), ok('n3')], expect: { status: 'running', nodes: 'n1:confirmed n2:reverted n3:confirmed n4:issued n5:pending', failures: 1 } },
      { at: T0 + 3 * min, receipts: [failed('n4', 'REPLACEMENT_UNHEALTHY')], expect: { status: 'halted', nodes: 'n1:confirmed n2:reverted n3:confirmed n4:reverted n5:pending', failures: 2, halt: { code: 'REPLACEMENT_UNHEALTHY', nodeId: 'n4' } } },
    ],
  },
  {
    name: 'failures within the budget let the run succeed, counted; a timeout counts as one',
    run: run({ namedCanaries: ['n1'], batch: { count: 2 }, maxFailures: 2 }),
    nodes: fleet('n1', 'n2', 'n3'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending n3:pending', issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], expect: { status: 'running', nodes: 'n1:confirmed n2:pending n3:pending', issue: ['n2', 'n3'] } },
      { at: T0 + 2 * min, receipts: [rolledBack('n2')], expect: { status: 'running', nodes: 'n1:confirmed n2:reverted n3:issued', failures: 1 } },
      { at: T0 + 32 * min, expect: { status: 'succeeded', nodes: 'n1:confirmed n2:reverted n3:timed-out', failures: 2 } },
    ],
  },
  {
    name: 'ROLLBACK_UNHEALTHY halts the run whatever the budget',
    run: run({ namedCanaries: ['n1'], maxFailures: 10 }),
    nodes: fleet('n1', 'n2', 'n3'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending n3:pending', issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], expect: { status: 'running', nodes: 'n1:confirmed n2:pending n3:pending', issue: ['n2', 'n3'] } },
      { at: T0 + 2 * min, receipts: [failed('n2', 'ROLLBACK_UNHEALTHY')], expect: { status: 'halted', nodes: 'n1:confirmed n2:reverted n3:issued', failures: 1, halt: { code: 'ROLLBACK_UNHEALTHY', nodeId: 'n2' } } },
    ],
  },
  {
    name: 'a failed receipt for a staging failure counts as a failure whatever its reason code',
    run: run({ namedCanaries: ['n1'], maxFailures: 0 }),
    nodes: fleet('n1', 'n2', 'n3'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending n3:pending', issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], expect: { status: 'running', nodes: 'n1:confirmed n2:pending n3:pending', issue: ['n2', 'n3'] } },
      { at: T0 + 2 * min, receipts: [failed('n3', 'STAGE_FAILED')], expect: { status: 'halted', nodes: 'n1:confirmed n2:issued n3:reverted', failures: 1, halt: { code: 'STAGE_FAILED', nodeId: 'n3' } } },
    ],
  },
  {
    name: 'the bake holds the next batch, and the end, until it has passed since the last confirmation',
    run: run({ namedCanaries: ['n1'], batch: { count: 1 }, bakeMs: 10 * min }),
    nodes: fleet('n1', 'n2'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending', issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], expect: { status: 'running', nodes: 'n1:confirmed n2:pending' } },
      { at: T0 + 11 * min - 1, expect: { status: 'running', nodes: 'n1:confirmed n2:pending' } },
      { at: T0 + 11 * min, expect: { status: 'running', nodes: 'n1:confirmed n2:pending', issue: ['n2'], batch: 1 } },
      { at: T0 + 12 * min, receipts: [ok('n2')], expect: { status: 'running', nodes: 'n1:confirmed n2:confirmed' } },
      { at: T0 + 22 * min, expect: { status: 'succeeded', nodes: 'n1:confirmed n2:confirmed' } },
    ],
  },
  {
    name: 'a revert during a bake counts: a canary\'s halts the run, a batch node\'s spends the budget',
    run: run({ namedCanaries: ['n1'], batch: { count: 2 }, bakeMs: 10 * min, maxFailures: 1 }),
    nodes: fleet('n1', 'n2', 'n3'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending n3:pending', issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], expect: { status: 'running', nodes: 'n1:confirmed n2:pending n3:pending' } },
      { at: T0 + 11 * min, expect: { status: 'running', nodes: 'n1:confirmed n2:pending n3:pending', issue: ['n2', 'n3'] } },
      { at: T0 + 12 * min, receipts: [ok('n2'), ok('n3')], expect: { status: 'running', nodes: 'n1:confirmed n2:confirmed n3:confirmed' } },
      // n3's supervisor gives up on the new version during the bake: a failure, within the budget.
      { at: T0 + 15 * min, facts: { n3: { supervisor: { state: 'error', since: T0 + 14 * min } } }, expect: { status: 'running', nodes: 'n1:confirmed n2:confirmed n3:reverted', failures: 1 } },
      // n2 rolls back (an operator's attempt, say) during the same bake: one over the budget.
      { at: T0 + 16 * min, reverts: [{ node: 'n2', outcome: 'rolled-back', code: 'REPLACEMENT_UNHEALTHY' }], expect: { status: 'halted', nodes: 'n1:confirmed n2:reverted n3:reverted', failures: 2, halt: { code: 'REPLACEMENT_UNHEALTHY', nodeId: 'n2' } } },
    ],
  },
  {
    name: 'a canary that fails during its bake halts the run',
    run: run({ namedCanaries: ['n1'], bakeMs: 5 * min }),
    nodes: fleet('n1', 'n2'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending', issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], expect: { status: 'running', nodes: 'n1:confirmed n2:pending' } },
      { at: T0 + 3 * min, reverts: [{ node: 'n1', outcome: 'failed', code: 'ROLLBACK_UNHEALTHY' }], expect: { status: 'halted', nodes: 'n1:reverted n2:pending', halt: { code: 'ROLLBACK_UNHEALTHY', nodeId: 'n1' } } },
    ],
  },
  {
    name: 'a revert after its bake has passed no longer counts against the run',
    run: run({ namedCanaries: ['n1'], bakeMs: 5 * min, batch: { count: 1 } }),
    nodes: fleet('n1', 'n2'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending', issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], expect: { status: 'running', nodes: 'n1:confirmed n2:pending' } },
      { at: T0 + 7 * min, reverts: [{ node: 'n1', outcome: 'rolled-back', code: 'REPLACEMENT_UNHEALTHY' }], facts: { n1: { supervisor: { state: 'error', since: T0 + 7 * min } } }, expect: { status: 'running', nodes: 'n1:confirmed n2:pending', issue: ['n2'] } },
    ],
  },
  {
    name: 'a paused run issues nothing, but its issued node reverting still halts it',
    run: run({ namedCanaries: ['n1'] }),
    nodes: fleet('n1', 'n2', 'n3'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending n3:pending', issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], run: { paused: true }, expect: { status: 'paused', nodes: 'n1:confirmed n2:pending n3:pending' } },
      { at: T0 + 2 * min, run: { paused: false }, expect: { status: 'running', nodes: 'n1:confirmed n2:pending n3:pending', issue: ['n2', 'n3'] } },
      { at: T0 + 3 * min, run: { paused: true }, expect: { status: 'paused', nodes: 'n1:confirmed n2:issued n3:issued' } },
      { at: T0 + 4 * min, receipts: [rolledBack('n2')], expect: { status: 'halted', nodes: 'n1:confirmed n2:reverted n3:issued', halt: { code: 'REPLACEMENT_UNHEALTHY', nodeId: 'n2' } } },
    ],
  },
  {
    name: 'a paused run still times out an issued attempt',
    run: run({ namedCanaries: ['n1'] }, { paused: false }),
    nodes: fleet('n1', 'n2'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending', issue: ['n1'] } },
      { at: T0 + 1 * min, run: { paused: true }, expect: { status: 'paused', nodes: 'n1:issued n2:pending' } },
      { at: T0 + 31 * min, expect: { status: 'halted', nodes: 'n1:timed-out n2:pending', halt: { code: 'TIMED_OUT', nodeId: 'n1' } } },
    ],
  },
  {
    name: 'a batch with refusals goes on; 90 % of the targets held halts the run instead of letting it succeed',
    run: run({ canaries: 0, batch: { percent: 100 }, maxRefused: { percent: 50 } }),
    nodes: fleet('n0', 'n1', 'n2', 'n3', 'n4', 'n5', 'n6', 'n7', 'n8', 'n9'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n0:pending n1:pending n2:pending n3:pending n4:pending n5:pending n6:pending n7:pending n8:pending n9:pending', issue: ['n0', 'n1', 'n2', 'n3', 'n4', 'n5', 'n6', 'n7', 'n8', 'n9'], batch: 1 } },
      { at: T0 + 1 * min, receipts: ['n1', 'n2', 'n3', 'n4', 'n5'].map((n) => refused(n, 'HELD')), expect: { status: 'running', nodes: 'n0:issued n1:refused n2:refused n3:refused n4:refused n5:refused n6:issued n7:issued n8:issued n9:issued' } },
      { at: T0 + 2 * min, receipts: [refused('n6', 'HELD'), refused('n7', 'HELD'), refused('n8', 'HELD'), refused('n9', 'HELD'), ok('n0')], expect: { status: 'halted', nodes: 'n0:confirmed n1:refused n2:refused n3:refused n4:refused n5:refused n6:refused n7:refused n8:refused n9:refused', halt: { code: 'TOO_MANY_REFUSED', nodeId: 'n6' } } },
    ],
  },
  {
    name: 'a window across midnight: issued inside with notAfter at its end, waiting outside with the next opening',
    // T0 is Tuesday 22:13:20 UTC.
    run: run({ namedCanaries: ['n1'], batch: { count: 1 }, windows: [parseWindow('daily 22:00-02:00')], verdictTimeoutMs: 4 * h }),
    nodes: fleet('n1', 'n2'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending', issue: ['n1'], notAfter: Date.parse('2023-11-15T02:00:00Z') } },
      { at: Date.parse('2023-11-15T01:00:00Z'), receipts: [ok('n1')], expect: { status: 'running', nodes: 'n1:confirmed n2:pending', issue: ['n2'], notAfter: Date.parse('2023-11-15T02:00:00Z') } },
    ],
  },
  {
    name: 'a window that closes mid-run stops issuing and resumes at the next one; its last heartbeat interval issues nothing',
    run: run({ namedCanaries: ['n1'], batch: { count: 1 }, windows: [parseWindow('Tue-Wed 22:00-23:00')], verdictTimeoutMs: h }),
    nodes: fleet('n1', 'n2', 'n3'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending n3:pending', issue: ['n1'], notAfter: Date.parse('2023-11-14T23:00:00Z') } },
      { at: Date.parse('2023-11-14T22:59:40Z'), receipts: [ok('n1')], expect: { status: 'waiting', nodes: 'n1:confirmed n2:pending n3:pending', nextWindowAt: Date.parse('2023-11-15T22:00:00Z') } },
      { at: Date.parse('2023-11-15T03:00:00Z'), expect: { status: 'waiting', nodes: 'n1:confirmed n2:pending n3:pending', nextWindowAt: Date.parse('2023-11-15T22:00:00Z') } },
      { at: Date.parse('2023-11-15T22:00:00Z'), expect: { status: 'running', nodes: 'n1:confirmed n2:pending n3:pending', issue: ['n2'], batch: 1, notAfter: Date.parse('2023-11-15T23:00:00Z') } },
      { at: Date.parse('2023-11-15T22:10:00Z'), receipts: [ok('n2')], expect: { status: 'running', nodes: 'n1:confirmed n2:confirmed n3:pending', issue: ['n3'] } },
    ],
  },
  {
    name: 'a window across the spring DST change in its zone closes at its local end',
    // Europe/Paris jumps from 02:00 CET to 03:00 CEST on 2026-03-29: the window 01:00-04:00 is two hours long that night.
    run: run({ namedCanaries: ['n1'], windows: [parseWindow('Sun 01:00-04:00')], tz: 'Europe/Paris', verdictTimeoutMs: 2 * h }, { startedAt: Date.parse('2026-03-29T00:30:00Z') }),
    nodes: fleet('n1', 'n2').map((n) => ({ ...n, lastHeartbeatAt: Date.parse('2026-03-29T00:29:00Z') })),
    steps: [
      { at: Date.parse('2026-03-28T23:59:00Z'), expect: { status: 'waiting', nodes: 'n1:pending n2:pending', nextWindowAt: Date.parse('2026-03-29T00:00:00Z') } },
      { at: Date.parse('2026-03-29T00:30:00Z'), expect: { status: 'running', nodes: 'n1:pending n2:pending', issue: ['n1'], notAfter: Date.parse('2026-03-29T02:00:00Z') } },
      { at: Date.parse('2026-03-29T02:00:00Z'), receipts: [ok('n1')], expect: { status: 'waiting', nodes: 'n1:confirmed n2:pending', nextWindowAt: Date.parse('2026-04-05T00:00:00Z') - h } },
    ],
  },
  {
    name: 'a window in the repeated hour of the autumn DST change opens at its first occurrence',
    // Europe/Paris goes back from 03:00 CEST to 02:00 CET on 2026-10-25: 02:30 happens twice.
    run: run({ namedCanaries: ['n1'], windows: [parseWindow('Sun 02:30-03:30')], tz: 'Europe/Paris' }, { startedAt: Date.parse('2026-10-25T00:00:00Z') }),
    nodes: fleet('n1').map((n) => ({ ...n, lastHeartbeatAt: Date.parse('2026-10-25T00:00:00Z') })),
    steps: [
      { at: Date.parse('2026-10-25T00:29:00Z'), expect: { status: 'waiting', nodes: 'n1:pending', nextWindowAt: Date.parse('2026-10-25T00:30:00Z') } },
      { at: Date.parse('2026-10-25T01:30:00Z'), expect: { status: 'running', nodes: 'n1:pending', issue: ['n1'], notAfter: Date.parse('2026-10-25T02:30:00Z') } },
    ],
  },
  {
    name: 'before --start-at the run is scheduled and issues nothing',
    run: run({ namedCanaries: ['n1'], startAt: T0 + h }),
    nodes: fleet('n1', 'n2'),
    steps: [
      { at: T0, expect: { status: 'scheduled', nodes: 'n1:pending n2:pending' } },
      { at: T0 + h, expect: { status: 'running', nodes: 'n1:pending n2:pending', issue: ['n1'] } },
    ],
  },
  {
    name: 'nodes that do not list the app are not-targeted, stale ones skipped, current ones already-current: none is issued or counted as confirmed',
    run: run({ namedCanaries: ['n1'] }),
    nodes: [node('n1'), node('n2', { listedApp: false, current: null }), node('n3', { lastHeartbeatAt: T0 - 10 * min }), node('n4', { current: '1.2.0' }), node('n5', { revertedVersions: ['1.2.0'] })],
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:not-targeted n3:skipped n4:already-current n5:excluded-reverted', issue: ['n1'] } },
      { at: T0 + min, receipts: [ok('n1')], expect: { status: 'succeeded', nodes: 'n1:confirmed n2:not-targeted n3:skipped n4:already-current n5:excluded-reverted' } },
    ],
  },
  {
    name: 'a selector that matched nothing leaves nothing to issue',
    run: run(),
    nodes: [],
    steps: [{ at: T0, expect: { status: 'succeeded', nodes: '' } }],
  },
  {
    name: 'a node that stops listing the app mid-run stays in it: its attempt ends by its verdict or timeout, a pending one is still asked',
    run: run({ namedCanaries: ['n1'], batch: { count: 1 }, maxFailures: 1 }),
    nodes: fleet('n1', 'n2', 'n3'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending n3:pending', issue: ['n1'] } },
      { at: T0 + min, receipts: [ok('n1')], expect: { status: 'running', nodes: 'n1:confirmed n2:pending n3:pending', issue: ['n2'] } },
      { at: T0 + 2 * min, facts: { n2: { current: null, supervisor: null }, n3: { current: null, supervisor: null } }, expect: { status: 'running', nodes: 'n1:confirmed n2:issued n3:pending' } },
      { at: T0 + 33 * min, expect: { status: 'running', nodes: 'n1:confirmed n2:timed-out n3:pending', issue: ['n3'], failures: 1 } },
      { at: T0 + 34 * min, receipts: [refused('n3', 'UNKNOWN_APP')], expect: { status: 'succeeded', nodes: 'n1:confirmed n2:timed-out n3:refused', failures: 1 } },
    ],
  },
  {
    name: 'a retry starts with the budget its run spent',
    run: run({ canaries: 0, batch: { count: 1 }, maxFailures: 1, failuresCarried: 1 }),
    nodes: fleet('n1', 'n2'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending', issue: ['n1'], batch: 1, failures: 1 } },
      { at: T0 + min, receipts: [rolledBack('n1')], expect: { status: 'halted', nodes: 'n1:reverted n2:pending', failures: 2, halt: { code: 'REPLACEMENT_UNHEALTHY', nodeId: 'n1' } } },
    ],
  },
  {
    name: 'a stopped run ends stopped and issues nothing more',
    run: run({ namedCanaries: ['n1'] }),
    nodes: fleet('n1', 'n2'),
    steps: [
      { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending', issue: ['n1'] } },
      { at: T0 + min, run: { stopped: true }, receipts: [ok('n1')], expect: { status: 'stopped', nodes: 'n1:confirmed n2:pending' } },
    ],
  },
];

for (const c of cases) test(c.name, () => void play(c));

test('the halt for a batch that cannot fetch says the artifact cannot be fetched, and the limits are shown per batch', () => {
  const c = cases.find((x) => x.name.startsWith('more of a batch than --max-fetch-failures'))!;
  const { plan } = play(c);
  assert.match(plan.haltReason?.message ?? '', /^the artifact cannot be fetched: 2 of the 4 nodes of batch 1 could not fetch web 1\.2\.0 \(the last: node n3\), over --max-fetch-failures 25%$/);
  assert.deepEqual(plan.fetchFailureLimits, { 0: 0, 1: 1 });
  assert.equal(plan.counts.fetchFailed, 2);
});

test('a percentage batch is of the targets frozen at the start, rounded up, at least one', () => {
  const nodes = [...fleet('a', 'b', 'c', 'd', 'e', 'f', 'g'), node('x', { listedApp: false }), node('y', { lastHeartbeatAt: null })];
  const at = (batch: RolloutPolicy['batch']) => planRollout({ run: run({ canaries: 0, batch }), nodes, issued: [], verdicts: [], reverts: [], now: T0 });
  assert.deepEqual([at({ percent: 10 }).batchSize, at({ percent: 50 }).batchSize, at({ percent: 100 }).batchSize, at({ count: 3 }).batchSize], [1, 4, 7, 3]);
  assert.deepEqual(at({ percent: 50 }).issue?.nodes, ['a', 'b', 'c', 'd']);
});

test('a node whose heartbeats are refused for clock skew is skipped CLOCK_SKEW when refused since before the start, and pending or issued CLOCK_SKEW while refused', () => {
  const stale = T0 - 10 * min;
  const nodes = [
    node('a', { lastHeartbeatAt: stale, clockSkewRefusedSince: T0 - 9 * min }),
    node('b', { lastHeartbeatAt: stale, clockSkewRefusedSince: T0 + min }),
    node('c', { lastHeartbeatAt: stale }),
    node('d', { lastHeartbeatAt: null, clockSkewRefusedSince: T0 - min }),
    node('e', { clockSkewRefusedSince: T0 + min }),
    node('f', { clockSkewRefusedSince: T0 + min }),
    node('g'),
  ];
  const plan = planRollout({ run: run({ namedCanaries: ['e'], canaries: 1 }), nodes, issued: [{ nodeId: 'e', attemptId: 'x', issuedAt: T0, notAfter: null, batch: 0 }], verdicts: [], reverts: [], now: T0 + 2 * min });
  const reasons = Object.fromEntries(Object.entries(plan.nodes).map(([id, p]) => [id, `${p.state}:${p.reason}`]));
  assert.deepEqual(reasons, {
    a: 'skipped:CLOCK_SKEW',
    // Refused only since after the start: it was skipped for being silent then.
    b: 'skipped:NO_RECENT_HEARTBEAT',
    c: 'skipped:NO_RECENT_HEARTBEAT',
    d: 'skipped:CLOCK_SKEW',
    e: 'issued:CLOCK_SKEW',
    f: 'pending:CLOCK_SKEW',
    g: 'pending:null',
  });
  assert.deepEqual([plan.status, plan.counts.targeted, plan.counts.pending], ['running', 3, 3], 'the reason changes no count or decision');
});

test('the plan does not depend on the order of the facts', () => {
  const nodes = fleet('n1', 'n2', 'n3', 'n4');
  const issued: Issued[] = [
    { nodeId: 'n1', attemptId: 'r1/n1', issuedAt: T0, notAfter: null, batch: 0 },
    { nodeId: 'n2', attemptId: 'r1/n2', issuedAt: T0 + min, notAfter: null, batch: 1 },
    { nodeId: 'n3', attemptId: 'r1/n3', issuedAt: T0 + min, notAfter: null, batch: 1 },
  ];
  const verdicts: VerdictFact[] = [
    { nodeId: 'n1', attemptId: 'r1/n1', outcome: 'active', reasonCode: null, at: T0 + min },
    { nodeId: 'n3', attemptId: 'r1/n3', outcome: 'refused', reasonCode: 'BUSY', at: T0 + 2 * min },
    { nodeId: 'n2', attemptId: 'r1/n2', outcome: 'failed', reasonCode: 'ROLLBACK_UNHEALTHY', at: T0 + 3 * min },
  ];
  const a = planRollout({ run: run(), nodes, issued, verdicts, reverts: [], now: T0 + 4 * min });
  const b = planRollout({ run: run(), nodes: [...nodes].reverse(), issued: [...issued].reverse(), verdicts: [...verdicts].reverse(), reverts: [], now: T0 + 4 * min });
  assert.deepEqual(b, a);
  assert.deepEqual([a.status, a.haltReason?.nodeId], ['halted', 'n2']);
});

test('when two nodes halt the run the earlier event is the reason', () => {
  const issued: Issued[] = [
    { nodeId: 'n1', attemptId: 'r1/n1', issuedAt: T0, notAfter: null, batch: 0 },
    { nodeId: 'n2', attemptId: 'r1/n2', issuedAt: T0 + min, notAfter: null, batch: 1 },
    { nodeId: 'n3', attemptId: 'r1/n3', issuedAt: T0 + min, notAfter: null, batch: 1 },
  ];
  const verdicts: VerdictFact[] = [
    { nodeId: 'n1', attemptId: 'r1/n1', outcome: 'active', reasonCode: null, at: T0 + min },
    { nodeId: 'n3', attemptId: 'r1/n3', outcome: 'refused', reasonCode: 'SIGNATURE_INVALID', at: T0 + 2 * min },
    { nodeId: 'n2', attemptId: 'r1/n2', outcome: 'rolled-back', reasonCode: 'REPLACEMENT_UNHEALTHY', at: T0 + 3 * min },
  ];
  const plan = planRollout({ run: run(), nodes: fleet('n1', 'n2', 'n3'), issued, verdicts, reverts: [], now: T0 + 4 * min });
  assert.deepEqual(plan.haltReason && { code: plan.haltReason.code, nodeId: plan.haltReason.nodeId }, { code: 'SIGNATURE_INVALID', nodeId: 'n3' });
});

test('a verdict after the timeout leaves the node timed-out; the earliest verdict within it decides', () => {
  const issued: Issued[] = [{ nodeId: 'n1', attemptId: 'a', issuedAt: T0, notAfter: null, batch: 0 }];
  const late: VerdictFact = { nodeId: 'n1', attemptId: 'a', outcome: 'active', reasonCode: null, at: T0 + 31 * min };
  assert.equal(planRollout({ run: run(), nodes: fleet('n1'), issued, verdicts: [late], reverts: [], now: T0 + 32 * min }).nodes.n1?.state, 'timed-out');
  const twice: VerdictFact[] = [{ ...late, outcome: 'rolled-back', at: T0 + 2 * min }, { ...late, at: T0 + min }];
  assert.equal(planRollout({ run: run(), nodes: fleet('n1'), issued, verdicts: twice, reverts: [], now: T0 + 3 * min }).nodes.n1?.state, 'confirmed');
});

test('retry covers every node that neither confirmed nor already ran the version', () => {
  const plan = planRollout({ run: run({ namedCanaries: ['n1'] }), nodes: [node('n1'), node('n2', { listedApp: false }), node('n3', { current: '1.2.0' }), node('n4', { lastHeartbeatAt: null }), node('n5'), node('n6', { revertedVersions: ['1.2.0'] })], issued: [{ nodeId: 'n1', attemptId: 'x', issuedAt: T0, notAfter: null, batch: 0 }], verdicts: [{ nodeId: 'n1', attemptId: 'x', outcome: 'active', reasonCode: null, at: T0 }], reverts: [], now: T0 });
  assert.deepEqual(retryNodes(plan), ['n4', 'n5', 'n6']);
});

test('a run halted by refusals whose last is DOWNGRADE_REFUSED names the command that authorizes going back; others name none', () => {
  const halted = (code: string) =>
    play({
      name: `refused ${code}`,
      run: run({ canaries: 0, batch: { percent: 100 }, maxRefused: { count: 0 } }),
      nodes: fleet('n1', 'n2'),
      steps: [
        { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending', issue: ['n1', 'n2'], batch: 1 } },
        { at: T0 + 1 * min, receipts: [refused('n1', code)], expect: { status: 'halted', nodes: 'n1:refused n2:issued', halt: { code: 'TOO_MANY_REFUSED', nodeId: 'n1' } } },
      ],
    }).plan.haltReason?.message ?? '';
  assert.match(halted('DOWNGRADE_REFUSED'), /\(the last: node n1, DOWNGRADE_REFUSED\), over --max-refused 0; the hosts ran a newer version: to go back, `steward-control release allow-downgrade web 1\.2\.0 --key <a release key of web>`, then start the rollout again$/);
  assert.doesNotMatch(halted('HELD'), /allow-downgrade/);
});

test("under TUF a DOWNGRADE_REFUSED halt names one --key per key up to the app's delegation threshold", () => {
  const r = run({ canaries: 0, batch: { percent: 100 }, maxRefused: { count: 0 } });
  const issued: Issued[] = [{ nodeId: 'n1', attemptId: 'a1', issuedAt: T0, notAfter: null, batch: 1 }];
  const verdicts: VerdictFact[] = [{ nodeId: 'n1', attemptId: 'a1', outcome: 'refused', reasonCode: 'DOWNGRADE_REFUSED', at: T0 + min }];
  const message = (downgradeSigners: { role: string; threshold: number } | null | undefined) =>
    planRollout({ run: r, nodes: fleet('n1'), issued, verdicts, reverts: [], now: T0 + min, ...(downgradeSigners === undefined ? {} : { downgradeSigners }) }).haltReason?.message ?? '';
  const tail = (cmd: string) => new RegExp(`; the hosts ran a newer version: to go back, ${cmd.replace(/[.()<>[\]]/g, '\\$&')}, then start the rollout again$`);
  assert.match(message({ role: 'app.web', threshold: 2 }), tail("`steward-control release allow-downgrade web 1.2.0 --key <K1> --key <K2>` (2 of the app.web delegation's keys)"));
  assert.match(message({ role: 'app.web', threshold: 1 }), tail('`steward-control release allow-downgrade web 1.2.0 --key <a key of the app.web delegation>`'));
  assert.match(message({ role: 'app.web', threshold: 7 }), tail("`steward-control release allow-downgrade web 1.2.0 --key <K1> --key <K2> ... --key <K7>` (7 of the app.web delegation's keys)"));
  // A fleet on keys, and a threshold no delegation can have: the one-key form.
  for (const s of [undefined, null, { role: 'app.web', threshold: 0 }, { role: 'app.web', threshold: 1.5 }]) {
    assert.match(message(s), tail('`steward-control release allow-downgrade web 1.2.0 --key <a release key of web>`'), JSON.stringify(s));
  }
});

// docs/design.md §21.5: what each TRUST_* refusal means for a run. The table names every TRUST_*
// code of errors.ts, so a new one fails here until it is decided.
test('a TRUST_* refusal halts the run as a release problem, except the host-state ones, which are refused and counted against --max-refused', () => {
  const decided: Record<string, 'halts' | 'host'> = {
    TRUST_UNSIGNED: 'halts',
    TRUST_SIGNATURE: 'halts',
    TRUST_MISMATCH: 'halts',
    TRUST_TOO_LARGE: 'halts',
    TRUST_INVALID: 'halts',
    TRUST_EXPIRED: 'host',
    TRUST_ROLLBACK: 'host',
    TRUST_NOT_DIRECTED: 'host',
  };
  assert.deepEqual(RELEASE_PROBLEM_CODES.filter((c) => c.startsWith('TRUST_')).sort(), Object.keys(decided).sort(), 'every TRUST_* code is decided');
  assert.deepEqual([...HOST_TRUST_CODES].sort(), Object.keys(decided).filter((c) => decided[c] === 'host').sort());
  for (const [code, kind] of Object.entries(decided)) {
    // A canary refusing: a release problem halts at once (even with every refusal tolerated); a
    // host-state refusal hands the canary's role on, and the run goes on.
    const canary = play({
      name: `canary refused ${code}`,
      run: run({ namedCanaries: ['n1'], maxRefused: { percent: 100 } }),
      nodes: fleet('n1', 'n2', 'n3', 'n4'),
      steps: [
        { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending n3:pending n4:pending', issue: ['n1'] } },
        kind === 'halts'
          ? { at: T0 + 1 * min, receipts: [refused('n1', code)], expect: { status: 'halted', nodes: 'n1:refused n2:pending n3:pending n4:pending', halt: { code, nodeId: 'n1' } } }
          : { at: T0 + 1 * min, receipts: [refused('n1', code)], expect: { status: 'running', nodes: 'n1:refused n2:pending n3:pending n4:pending', issue: [NEXT_CANARY], batch: 0, canaries: [] } },
      ],
    });
    assert.equal(canary.plan.nodes['n1']?.reason, code, `${code}: the node's reason is the receipt's code`);
    if (kind === 'halts') {
      assert.match(canary.plan.haltReason?.message ?? '', new RegExp(`^node n1 refused web 1\\.2\\.0: a problem with the release \\(${code}\\); `), code);
      if (code === 'TRUST_UNSIGNED') assert.match(canary.plan.haltReason?.message ?? '', /the app\.web delegation the host trusts does not sign/);
      continue;
    }
    // Past --max-refused, the host-state refusals halt TOO_MANY_REFUSED, naming where to look.
    const many = play({
      name: `batch refused ${code}`,
      run: run({ canaries: 0, batch: { percent: 100 }, maxRefused: { count: 1 } }),
      nodes: fleet('n1', 'n2', 'n3'),
      steps: [
        { at: T0, expect: { status: 'running', nodes: 'n1:pending n2:pending n3:pending', issue: ['n1', 'n2', 'n3'], batch: 1 } },
        { at: T0 + 1 * min, receipts: [refused('n1', code)], expect: { status: 'running', nodes: 'n1:refused n2:issued n3:issued' } },
        { at: T0 + 2 * min, receipts: [refused('n2', code)], expect: { status: 'halted', nodes: 'n1:refused n2:refused n3:issued', halt: { code: 'TOO_MANY_REFUSED', nodeId: 'n2' } } },
      ],
    });
    assert.match(many.plan.haltReason?.message ?? '', new RegExp(`\\(the last: node n2, ${code}\\), over --max-refused 1; ${code} is the hosts' own trust state, not the release: .*metadata-stale.*\`steward-control rollout retry web\`$`), code);
  }
});
