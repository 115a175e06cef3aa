import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  planRollout,
  retryNodes,
  type Issued,
  type NodeFacts,
  type NodeState,
  type Plan,
  type RolloutRun,
  type VerdictFact,
} from '../../src/core/rollout-planner.js';

// Every time is ms on a fake clock; the run starts at T0.
const T0 = 1_700_000_000_000;
const s = 1_000;
const min = 60 * s;

const run = (over: Partial<RolloutRun> = {}): RolloutRun => ({
  id: 'r1',
  app: 'web',
  version: '1.2.0',
  startedAt: T0,
  canary: null,
  batchSize: 2,
  verdictTimeoutMs: 30 * min,
  allowRetryReverted: false,
  heartbeatIntervalMs: 30 * s,
  stopped: false,
  ...over,
});

// A node that heartbeat 10 s before the run started and runs 1.1.0.
const node = (nodeId: string, over: Partial<NodeFacts> = {}): NodeFacts => ({
  nodeId,
  lastHeartbeatAt: T0 - 10 * s,
  current: '1.1.0',
  revertedVersions: [],
  ...over,
});
const fleet = (...ids: string[]): NodeFacts[] => ids.map((id) => node(id));

// A receipt arriving at a step. Without `attemptId` it carries the one this run issued the node.
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
  canary: string | null;
  nodes: Record<string, NodeState>;
  issue: string[];
  halt?: { code: string; nodeId: string };
}

// One call of the planner at `at`, after the step's receipts were recorded. The caller then
// records the plan's issues (attemptId `<run>/<node>`) unless `record` is false.
interface Step {
  at: number;
  receipts?: Receipt[];
  stop?: boolean;
  record?: boolean;
  expect: Expected;
}

interface Case {
  name: string;
  run: RolloutRun;
  nodes: NodeFacts[];
  steps: Step[];
}

// Plays the steps as the control plane would, checking each plan against the row and the
// invariants every plan keeps: the same facts give the same plan, and a node already issued in
// this run is never issued again. Returns the last plan and the facts it was made from.
function play(c: Case): { plan: Plan; issued: Issued[]; verdicts: VerdictFact[] } {
  let r = c.run;
  const issued: Issued[] = [];
  const verdicts: VerdictFact[] = [];
  let plan: Plan | null = null;
  for (const [i, step] of c.steps.entries()) {
    const where = `${c.name}, step ${i + 1} (T0+${(step.at - T0) / s}s)`;
    if (step.stop) r = { ...r, stopped: true };
    for (const rc of step.receipts ?? []) {
      const attemptId = rc.attemptId ?? issued.find((x) => x.nodeId === rc.node)?.attemptId;
      assert.ok(attemptId, `${where}: the table sends a receipt for ${rc.node}, which was never issued`);
      verdicts.push({ nodeId: rc.node, attemptId, outcome: rc.outcome, reasonCode: rc.code ?? null, at: step.at });
    }
    const input = { run: r, nodes: c.nodes, issued: [...issued], verdicts: [...verdicts], now: step.at };
    plan = planRollout(input);
    assert.deepEqual(planRollout(input), plan, `${where}: the same facts give the same plan`);
    for (const id of plan.issue) {
      assert.ok(!issued.some((x) => x.nodeId === id), `${where}: ${id} was already issued in this run`);
    }
    const { haltReason, ...rest } = plan;
    const { halt, ...want } = step.expect;
    assert.deepEqual(rest, want, where);
    assert.deepEqual(haltReason ? { code: haltReason.code, nodeId: haltReason.nodeId } : undefined, halt, `${where}: halt`);
    if (haltReason) assert.match(haltReason.message, new RegExp(`${haltReason.nodeId}.*web 1\\.2\\.0`), `${where}: message`);
    if (step.record !== false) {
      for (const id of plan.issue) issued.push({ nodeId: id, attemptId: `${r.id}/${id}`, issuedAt: step.at });
    }
  }
  assert.ok(plan);
  return { plan, issued, verdicts };
}

const cases: Case[] = [
  {
    name: 'a canary goes first, then batches of 2, each only once the previous one is done',
    run: run(),
    nodes: fleet('n5', 'n3', 'n1', 'n4', 'n2'),
    steps: [
      { at: T0, expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'pending', n3: 'pending', n4: 'pending', n5: 'pending' }, issue: ['n1'] } },
      { at: T0 + 1 * min, expect: { status: 'running', canary: 'n1', nodes: { n1: 'issued', n2: 'pending', n3: 'pending', n4: 'pending', n5: 'pending' }, issue: [] } },
      { at: T0 + 2 * min, receipts: [ok('n1')], expect: { status: 'running', canary: 'n1', nodes: { n1: 'confirmed', n2: 'pending', n3: 'pending', n4: 'pending', n5: 'pending' }, issue: ['n2', 'n3'] } },
      { at: T0 + 3 * min, receipts: [ok('n2')], expect: { status: 'running', canary: 'n1', nodes: { n1: 'confirmed', n2: 'confirmed', n3: 'issued', n4: 'pending', n5: 'pending' }, issue: [] } },
      { at: T0 + 4 * min, receipts: [ok('n3')], expect: { status: 'running', canary: 'n1', nodes: { n1: 'confirmed', n2: 'confirmed', n3: 'confirmed', n4: 'pending', n5: 'pending' }, issue: ['n4', 'n5'] } },
      { at: T0 + 5 * min, receipts: [ok('n4'), ok('n5')], expect: { status: 'succeeded', canary: 'n1', nodes: { n1: 'confirmed', n2: 'confirmed', n3: 'confirmed', n4: 'confirmed', n5: 'confirmed' }, issue: [] } },
    ],
  },
  {
    name: 'the requested canary goes first when it is eligible',
    run: run({ canary: 'n3' }),
    nodes: fleet('n1', 'n2', 'n3'),
    steps: [
      { at: T0, expect: { status: 'running', canary: 'n3', nodes: { n1: 'pending', n2: 'pending', n3: 'pending' }, issue: ['n3'] } },
      { at: T0 + 1 * min, receipts: [ok('n3')], expect: { status: 'running', canary: 'n3', nodes: { n1: 'pending', n2: 'pending', n3: 'confirmed' }, issue: ['n1', 'n2'] } },
    ],
  },
  {
    name: 'a requested canary that is stale gives the role to the first eligible node',
    run: run({ canary: 'n2' }),
    nodes: [node('n1'), node('n2', { lastHeartbeatAt: null }), node('n3')],
    steps: [{ at: T0, expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'skipped', n3: 'pending' }, issue: ['n1'] } }],
  },
  {
    name: 'a canary that rolls back halts the run before any other node is touched',
    run: run(),
    nodes: fleet('n1', 'n2', 'n3', 'n4'),
    steps: [
      { at: T0, expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'pending', n3: 'pending', n4: 'pending' }, issue: ['n1'] } },
      { at: T0 + 2 * min, receipts: [rolledBack('n1')], expect: { status: 'halted', canary: 'n1', nodes: { n1: 'reverted', n2: 'pending', n3: 'pending', n4: 'pending' }, issue: [], halt: { code: 'REPLACEMENT_UNHEALTHY', nodeId: 'n1' } } },
      { at: T0 + 60 * min, expect: { status: 'halted', canary: 'n1', nodes: { n1: 'reverted', n2: 'pending', n3: 'pending', n4: 'pending' }, issue: [], halt: { code: 'REPLACEMENT_UNHEALTHY', nodeId: 'n1' } } },
    ],
  },
  {
    name: 'a batch node that fails halts the run while the rest of its batch finishes',
    run: run(),
    nodes: fleet('n1', 'n2', 'n3', 'n4'),
    steps: [
      { at: T0, expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'pending', n3: 'pending', n4: 'pending' }, issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], expect: { status: 'running', canary: 'n1', nodes: { n1: 'confirmed', n2: 'pending', n3: 'pending', n4: 'pending' }, issue: ['n2', 'n3'] } },
      { at: T0 + 2 * min, receipts: [failed('n2')], expect: { status: 'halted', canary: 'n1', nodes: { n1: 'confirmed', n2: 'reverted', n3: 'issued', n4: 'pending' }, issue: [], halt: { code: 'ROLLBACK_UNHEALTHY', nodeId: 'n2' } } },
      { at: T0 + 3 * min, receipts: [ok('n3')], expect: { status: 'halted', canary: 'n1', nodes: { n1: 'confirmed', n2: 'reverted', n3: 'confirmed', n4: 'pending' }, issue: [], halt: { code: 'ROLLBACK_UNHEALTHY', nodeId: 'n2' } } },
    ],
  },
  {
    name: 'a rolled-back receipt without a reason code halts as ROLLED_BACK',
    run: run(),
    nodes: fleet('n1', 'n2'),
    steps: [
      { at: T0, expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'pending' }, issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [{ node: 'n1', outcome: 'rolled-back' }], expect: { status: 'halted', canary: 'n1', nodes: { n1: 'reverted', n2: 'pending' }, issue: [], halt: { code: 'ROLLED_BACK', nodeId: 'n1' } } },
    ],
  },
  {
    name: 'a release problem at a batch node halts the run',
    run: run(),
    nodes: fleet('n1', 'n2', 'n3', 'n4', 'n5'),
    steps: [
      { at: T0, expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'pending', n3: 'pending', n4: 'pending', n5: 'pending' }, issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], expect: { status: 'running', canary: 'n1', nodes: { n1: 'confirmed', n2: 'pending', n3: 'pending', n4: 'pending', n5: 'pending' }, issue: ['n2', 'n3'] } },
      { at: T0 + 2 * min, receipts: [refused('n3', 'INTEGRITY_MISMATCH'), ok('n2')], expect: { status: 'halted', canary: 'n1', nodes: { n1: 'confirmed', n2: 'confirmed', n3: 'refused', n4: 'pending', n5: 'pending' }, issue: [], halt: { code: 'INTEGRITY_MISMATCH', nodeId: 'n3' } } },
    ],
  },
  {
    name: 'a canary that cannot fetch the release halts the run instead of handing the role on',
    run: run(),
    nodes: fleet('n1', 'n2'),
    steps: [
      { at: T0, expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'pending' }, issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [refused('n1', 'FETCH_FAILED')], expect: { status: 'halted', canary: 'n1', nodes: { n1: 'refused', n2: 'pending' }, issue: [], halt: { code: 'FETCH_FAILED', nodeId: 'n1' } } },
    ],
  },
  {
    name: 'a QUARANTINED refusal marks the node refused and the run goes on',
    run: run(),
    nodes: fleet('n1', 'n2', 'n3', 'n4'),
    steps: [
      { at: T0, expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'pending', n3: 'pending', n4: 'pending' }, issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], expect: { status: 'running', canary: 'n1', nodes: { n1: 'confirmed', n2: 'pending', n3: 'pending', n4: 'pending' }, issue: ['n2', 'n3'] } },
      { at: T0 + 2 * min, receipts: [refused('n2', 'QUARANTINED'), ok('n3')], expect: { status: 'running', canary: 'n1', nodes: { n1: 'confirmed', n2: 'refused', n3: 'confirmed', n4: 'pending' }, issue: ['n4'] } },
      { at: T0 + 3 * min, receipts: [ok('n4')], expect: { status: 'succeeded', canary: 'n1', nodes: { n1: 'confirmed', n2: 'refused', n3: 'confirmed', n4: 'confirmed' }, issue: [] } },
    ],
  },
  {
    name: 'a refused canary hands the role to the next eligible node',
    run: run({ canary: 'n2' }),
    nodes: fleet('n1', 'n2', 'n3'),
    steps: [
      { at: T0, expect: { status: 'running', canary: 'n2', nodes: { n1: 'pending', n2: 'pending', n3: 'pending' }, issue: ['n2'] } },
      { at: T0 + 1 * min, receipts: [refused('n2', 'HELD')], expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'refused', n3: 'pending' }, issue: ['n1'] } },
      { at: T0 + 2 * min, receipts: [refused('n1', 'BUSY')], expect: { status: 'running', canary: 'n3', nodes: { n1: 'refused', n2: 'refused', n3: 'pending' }, issue: ['n3'] } },
      { at: T0 + 3 * min, receipts: [ok('n3')], expect: { status: 'succeeded', canary: 'n3', nodes: { n1: 'refused', n2: 'refused', n3: 'confirmed' }, issue: [] } },
    ],
  },
  {
    name: 'a refused code outside the known sets is a refusal that lets the run go on',
    run: run(),
    nodes: fleet('n1', 'n2'),
    steps: [
      { at: T0, expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'pending' }, issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [refused('n1', 'JOURNAL_INVALID')], expect: { status: 'running', canary: 'n2', nodes: { n1: 'refused', n2: 'pending' }, issue: ['n2'] } },
    ],
  },
  {
    name: 'a run whose every canary candidate refuses ends succeeded with no canary',
    run: run(),
    nodes: fleet('n1', 'n2'),
    steps: [
      { at: T0, expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'pending' }, issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [refused('n1', 'DOWNGRADE_REFUSED')], expect: { status: 'running', canary: 'n2', nodes: { n1: 'refused', n2: 'pending' }, issue: ['n2'] } },
      { at: T0 + 2 * min, receipts: [refused('n2', 'DISK_FULL')], expect: { status: 'succeeded', canary: null, nodes: { n1: 'refused', n2: 'refused' }, issue: [] } },
    ],
  },
  {
    name: 'a canary with no verdict within the timeout times out and halts the run, and a late receipt changes nothing',
    run: run(),
    nodes: fleet('n1', 'n2'),
    steps: [
      { at: T0, expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'pending' }, issue: ['n1'] } },
      { at: T0 + 30 * min, expect: { status: 'running', canary: 'n1', nodes: { n1: 'issued', n2: 'pending' }, issue: [] } },
      { at: T0 + 30 * min + 1, expect: { status: 'halted', canary: 'n1', nodes: { n1: 'timed-out', n2: 'pending' }, issue: [], halt: { code: 'TIMED_OUT', nodeId: 'n1' } } },
      { at: T0 + 31 * min, receipts: [ok('n1')], expect: { status: 'halted', canary: 'n1', nodes: { n1: 'timed-out', n2: 'pending' }, issue: [], halt: { code: 'TIMED_OUT', nodeId: 'n1' } } },
    ],
  },
  {
    name: 'a verdict that arrives exactly at the timeout still counts',
    run: run(),
    nodes: fleet('n1', 'n2'),
    steps: [
      { at: T0, expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'pending' }, issue: ['n1'] } },
      { at: T0 + 30 * min, receipts: [ok('n1')], expect: { status: 'running', canary: 'n1', nodes: { n1: 'confirmed', n2: 'pending' }, issue: ['n2'] } },
    ],
  },
  {
    name: 'a batch node with no verdict within the timeout halts the run',
    run: run({ batchSize: 3 }),
    nodes: fleet('n1', 'n2', 'n3'),
    steps: [
      { at: T0, expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'pending', n3: 'pending' }, issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], expect: { status: 'running', canary: 'n1', nodes: { n1: 'confirmed', n2: 'pending', n3: 'pending' }, issue: ['n2', 'n3'] } },
      { at: T0 + 2 * min, receipts: [ok('n2')], expect: { status: 'running', canary: 'n1', nodes: { n1: 'confirmed', n2: 'confirmed', n3: 'issued' }, issue: [] } },
      { at: T0 + 32 * min, expect: { status: 'halted', canary: 'n1', nodes: { n1: 'confirmed', n2: 'confirmed', n3: 'timed-out' }, issue: [], halt: { code: 'TIMED_OUT', nodeId: 'n3' } } },
    ],
  },
  {
    name: 'nodes with no heartbeat in the last 3 intervals when the run starts are skipped',
    run: run(),
    nodes: [
      node('n1', { lastHeartbeatAt: T0 - 90 * s }), // exactly 3 intervals ago: still alive
      node('n2', { lastHeartbeatAt: T0 - 90 * s - 1 }),
      node('n3', { lastHeartbeatAt: null }),
      node('n4'),
    ],
    steps: [
      { at: T0, expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'skipped', n3: 'skipped', n4: 'pending' }, issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], expect: { status: 'running', canary: 'n1', nodes: { n1: 'confirmed', n2: 'skipped', n3: 'skipped', n4: 'pending' }, issue: ['n4'] } },
      { at: T0 + 2 * min, receipts: [ok('n4')], expect: { status: 'succeeded', canary: 'n1', nodes: { n1: 'confirmed', n2: 'skipped', n3: 'skipped', n4: 'confirmed' }, issue: [] } },
    ],
  },
  {
    name: 'a node that reverted the version before is not sent it again',
    run: run(),
    nodes: [node('n1'), node('n2', { revertedVersions: ['1.0.0', '1.2.0'] }), node('n3', { revertedVersions: ['1.1.1'] })],
    steps: [
      { at: T0, expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'excluded-reverted', n3: 'pending' }, issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], expect: { status: 'running', canary: 'n1', nodes: { n1: 'confirmed', n2: 'excluded-reverted', n3: 'pending' }, issue: ['n3'] } },
      { at: T0 + 2 * min, receipts: [ok('n3')], expect: { status: 'succeeded', canary: 'n1', nodes: { n1: 'confirmed', n2: 'excluded-reverted', n3: 'confirmed' }, issue: [] } },
    ],
  },
  {
    name: 'a node that reverted the version before is sent it again when the run allows a retry',
    run: run({ allowRetryReverted: true }),
    nodes: [node('n1'), node('n2', { revertedVersions: ['1.2.0'] }), node('n3')],
    steps: [
      { at: T0, expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'pending', n3: 'pending' }, issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], expect: { status: 'running', canary: 'n1', nodes: { n1: 'confirmed', n2: 'pending', n3: 'pending' }, issue: ['n2', 'n3'] } },
    ],
  },
  {
    name: 'a node that already runs the version is confirmed without an attempt and is not the canary',
    run: run({ canary: 'n1' }),
    nodes: [node('n1', { current: '1.2.0' }), node('n2'), node('n3', { current: '1.2.0', revertedVersions: ['1.2.0'] })],
    steps: [
      { at: T0, expect: { status: 'running', canary: 'n2', nodes: { n1: 'confirmed', n2: 'pending', n3: 'confirmed' }, issue: ['n2'] } },
      { at: T0 + 1 * min, receipts: [ok('n2')], expect: { status: 'succeeded', canary: 'n2', nodes: { n1: 'confirmed', n2: 'confirmed', n3: 'confirmed' }, issue: [] } },
    ],
  },
  {
    name: 'a receipt carrying an attemptId this run did not issue is ignored',
    run: run(),
    nodes: fleet('n1', 'n2'),
    steps: [
      { at: T0, expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'pending' }, issue: ['n1'] } },
      {
        at: T0 + 1 * min,
        receipts: [
          { node: 'n1', outcome: 'rolled-back', code: 'REPLACEMENT_UNHEALTHY', attemptId: 'r0/n1' }, // an earlier run's attempt
          { node: 'n2', outcome: 'active', attemptId: 'r1/n1' }, // another node quoting n1's attempt
        ],
        expect: { status: 'running', canary: 'n1', nodes: { n1: 'issued', n2: 'pending' }, issue: [] },
      },
      { at: T0 + 2 * min, receipts: [ok('n1')], expect: { status: 'running', canary: 'n1', nodes: { n1: 'confirmed', n2: 'pending' }, issue: ['n2'] } },
    ],
  },
  {
    name: 'a stopped run issues nothing more and still records the verdicts of its attempts',
    run: run({ batchSize: 1 }),
    nodes: fleet('n1', 'n2', 'n3'),
    steps: [
      { at: T0, expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'pending', n3: 'pending' }, issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], expect: { status: 'running', canary: 'n1', nodes: { n1: 'confirmed', n2: 'pending', n3: 'pending' }, issue: ['n2'] } },
      { at: T0 + 2 * min, stop: true, expect: { status: 'stopped', canary: 'n1', nodes: { n1: 'confirmed', n2: 'issued', n3: 'pending' }, issue: [] } },
      { at: T0 + 3 * min, receipts: [ok('n2')], expect: { status: 'stopped', canary: 'n1', nodes: { n1: 'confirmed', n2: 'confirmed', n3: 'pending' }, issue: [] } },
    ],
  },
  {
    name: 'a run stopped before its canary was issued issues nothing',
    run: run({ stopped: true }),
    nodes: fleet('n1', 'n2'),
    steps: [{ at: T0, expect: { status: 'stopped', canary: 'n1', nodes: { n1: 'pending', n2: 'pending' }, issue: [] } }],
  },
  {
    name: 'an issue list the caller has not recorded is planned again unchanged, and once recorded it is never planned again',
    run: run(),
    nodes: fleet('n1', 'n2', 'n3'),
    steps: [
      { at: T0, record: false, expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'pending', n3: 'pending' }, issue: ['n1'] } },
      { at: T0 + 1 * s, expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'pending', n3: 'pending' }, issue: ['n1'] } },
      { at: T0 + 2 * s, expect: { status: 'running', canary: 'n1', nodes: { n1: 'issued', n2: 'pending', n3: 'pending' }, issue: [] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], record: false, expect: { status: 'running', canary: 'n1', nodes: { n1: 'confirmed', n2: 'pending', n3: 'pending' }, issue: ['n2', 'n3'] } },
      { at: T0 + 2 * min, expect: { status: 'running', canary: 'n1', nodes: { n1: 'confirmed', n2: 'pending', n3: 'pending' }, issue: ['n2', 'n3'] } },
      { at: T0 + 3 * min, expect: { status: 'running', canary: 'n1', nodes: { n1: 'confirmed', n2: 'issued', n3: 'issued' }, issue: [] } },
    ],
  },
];

for (const c of cases) test(c.name, () => void play(c));

test('a retry after a halt covers the nodes that did not confirm, and a node that reverted stays excluded', () => {
  const first = play({
    name: 'first run',
    run: run(),
    nodes: [...fleet('n1', 'n2', 'n3', 'n4'), node('n5', { lastHeartbeatAt: null })],
    steps: [
      { at: T0, expect: { status: 'running', canary: 'n1', nodes: { n1: 'pending', n2: 'pending', n3: 'pending', n4: 'pending', n5: 'skipped' }, issue: ['n1'] } },
      { at: T0 + 1 * min, receipts: [ok('n1')], expect: { status: 'running', canary: 'n1', nodes: { n1: 'confirmed', n2: 'pending', n3: 'pending', n4: 'pending', n5: 'skipped' }, issue: ['n2', 'n3'] } },
      { at: T0 + 2 * min, receipts: [rolledBack('n2'), ok('n3')], expect: { status: 'halted', canary: 'n1', nodes: { n1: 'confirmed', n2: 'reverted', n3: 'confirmed', n4: 'pending', n5: 'skipped' }, issue: [], halt: { code: 'REPLACEMENT_UNHEALTHY', nodeId: 'n2' } } },
    ],
  });
  assert.deepEqual(retryNodes(first.plan), ['n2', 'n4', 'n5']);

  // The retry starts an hour later over those nodes; n2's rolled-back receipt is now history,
  // and n5 has come back.
  const T1 = T0 + 60 * min;
  const retryRun = run({ id: 'r2', startedAt: T1 });
  const nodes = [node('n2', { revertedVersions: ['1.2.0'], lastHeartbeatAt: T1 - s }), node('n4', { lastHeartbeatAt: T1 - s }), node('n5', { lastHeartbeatAt: T1 - s })];
  const start = planRollout({ run: retryRun, nodes, issued: [], verdicts: first.verdicts, now: T1 });
  assert.deepEqual(start, { status: 'running', canary: 'n4', nodes: { n2: 'excluded-reverted', n4: 'pending', n5: 'pending' }, issue: ['n4'] });
  // The first run's receipts carry its own attemptIds and so do not count in the retry.
  const issued: Issued[] = [{ nodeId: 'n4', attemptId: 'r2/n4', issuedAt: T1 }];
  const waiting = planRollout({ run: retryRun, nodes, issued, verdicts: first.verdicts, now: T1 + min });
  assert.equal(waiting.nodes.n4, 'issued');
});

test('retry covers every node that did not confirm, skipped, excluded, refused and timed-out ones included', () => {
  const plan: Plan = {
    status: 'halted',
    haltReason: { code: 'TIMED_OUT', nodeId: 'f', message: 'node f sent no verdict' },
    canary: 'a',
    nodes: { h: 'pending', a: 'confirmed', b: 'skipped', c: 'excluded-reverted', d: 'refused', e: 'reverted', f: 'timed-out', g: 'issued' },
    issue: [],
  };
  assert.deepEqual(retryNodes(plan), ['b', 'c', 'd', 'e', 'f', 'g', 'h']);
  assert.deepEqual(retryNodes({ status: 'succeeded', canary: 'a', nodes: { a: 'confirmed' }, issue: [] }), []);
});

test('the plan does not depend on the order of the facts', () => {
  const nodes = fleet('n1', 'n2', 'n3', 'n4');
  const issued: Issued[] = [
    { nodeId: 'n1', attemptId: 'r1/n1', issuedAt: T0 },
    { nodeId: 'n2', attemptId: 'r1/n2', issuedAt: T0 + min },
    { nodeId: 'n3', attemptId: 'r1/n3', issuedAt: T0 + min },
  ];
  const verdicts: VerdictFact[] = [
    { nodeId: 'n1', attemptId: 'r1/n1', outcome: 'active', reasonCode: null, at: T0 + min },
    { nodeId: 'n3', attemptId: 'r1/n3', outcome: 'refused', reasonCode: 'BUSY', at: T0 + 2 * min },
    { nodeId: 'n2', attemptId: 'r1/n2', outcome: 'failed', reasonCode: 'ROLLBACK_UNHEALTHY', at: T0 + 3 * min },
  ];
  const a = planRollout({ run: run(), nodes, issued, verdicts, now: T0 + 4 * min });
  const b = planRollout({ run: run(), nodes: [...nodes].reverse(), issued: [...issued].reverse(), verdicts: [...verdicts].reverse(), now: T0 + 4 * min });
  assert.deepEqual(b, a);
  assert.equal(a.status, 'halted');
  assert.equal(a.haltReason?.nodeId, 'n2');
});

test('when two nodes halt the run the earlier event is the reason', () => {
  const nodes = fleet('n1', 'n2', 'n3');
  const issued: Issued[] = [
    { nodeId: 'n1', attemptId: 'r1/n1', issuedAt: T0 },
    { nodeId: 'n2', attemptId: 'r1/n2', issuedAt: T0 + min },
    { nodeId: 'n3', attemptId: 'r1/n3', issuedAt: T0 + min },
  ];
  const verdicts: VerdictFact[] = [
    { nodeId: 'n1', attemptId: 'r1/n1', outcome: 'active', reasonCode: null, at: T0 + min },
    { nodeId: 'n3', attemptId: 'r1/n3', outcome: 'refused', reasonCode: 'SIGNATURE_INVALID', at: T0 + 2 * min },
    { nodeId: 'n2', attemptId: 'r1/n2', outcome: 'rolled-back', reasonCode: 'REPLACEMENT_UNHEALTHY', at: T0 + 3 * min },
  ];
  const plan = planRollout({ run: run(), nodes, issued, verdicts, now: T0 + 4 * min });
  assert.deepEqual(plan.haltReason && { code: plan.haltReason.code, nodeId: plan.haltReason.nodeId }, { code: 'SIGNATURE_INVALID', nodeId: 'n3' });
});
