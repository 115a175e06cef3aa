// docs/design.md §18, "downloads never halt a fleet on one host's word": a node whose helper could not
// fetch the release (a signed `refused` receipt with FETCH_FAILED, after its retries) is `failed`
// and counted in the failure budget like a revert, and the run goes on; only more of one batch
// than --max-fetch-failures (default 20 %) halts it, with the reason "the artifact cannot be
// fetched". Fake nodes over HTTP, on both store backends.
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { formatRun } from '../../src/control/cli/commands/rollout.js';
import { resolvePolicy } from '../../src/control/rollouts/run-options.js';
import { describeRun, type RunStatusView } from '../../src/control/rollouts/run-status.js';
import { startRun, type RunOptions } from '../../src/control/rollouts/start-run.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { enrollNodes, FakeClock, type FakeNode, startControlInProcess, startControlOn, type Control as AnyControl } from '../helpers/control-harness.js';
import { REPO } from '../helpers/host.js';
import { describeEachBackend } from '../helpers/store-backends.js';

type Control = AnyControl<ControlStore>;

describeEachBackend((backend) => {
  let c: Control | null = null;
  afterEach(async () => {
    await c?.close();
    c = null;
  });

  // Six nodes reporting web 1.0.0, sorted by nodeId; web 1.1.0 in the catalog; a run whose canary
  // is the first node and whose one batch is the five others.
  async function fleetRun(o: RunOptions): Promise<{ c: Control; nodes: FakeNode[] }> {
    c = await startControlOn(backend);
    const nodes = await enrollNodes(c, 6);
    for (const n of nodes) assert.equal((await n.heartbeat()).status, 200);
    nodes.sort((x, y) => (x.nodeId < y.nodeId ? -1 : 1));
    await c.addRelease('web', '1.1.0');
    await startRun(c.store, 'web', '1.1.0', { canary: [nodes[0]!.nodeId], batch: '5', bakeMs: 0, ...o });
    await answered(c, nodes[0]!, 'active');
    return { c, nodes };
  }

  const answered = async (ctl: Control, n: FakeNode, ...a: Parameters<FakeNode['answer']>) => {
    const desired = await n.answer(...a);
    await ctl.server.tick();
    return desired;
  };

  const view = (ctl: Control): Promise<RunStatusView> => ctl.store.read(async (tx) => describeRun(tx, (await tx.runs.latest('web'))!));

  test('a node whose downloads all failed is failed FETCH_FAILED, within the budget, and the run goes on to succeed', async () => {
    const { c, nodes } = await fleetRun({ maxFailures: 1 });
    const [, n1, ...rest] = nodes as [FakeNode, FakeNode, ...FakeNode[]];
    assert.equal((await answered(c, n1, 'refused', 'FETCH_FAILED')).length, 1);
    let v = await view(c);
    assert.equal(v.status, 'running', JSON.stringify(v.haltReason));
    const one = v.nodes.find((x) => x.nodeId === n1.nodeId)!;
    assert.deepEqual([one.state, one.reason, one.outcome, one.reasonCode], ['failed', 'FETCH_FAILED', 'refused', 'FETCH_FAILED']);
    for (const n of rest) assert.equal((await answered(c, n, 'active')).length, 1);
    v = await view(c);
    assert.equal(v.status, 'succeeded', JSON.stringify(v.haltReason));
    assert.equal(v.failures, 1);
    assert.equal(v.counts.fetchFailed, 1);
    assert.equal(v.maxFetchFailures, '20%');
    assert.deepEqual(v.fetchFailureLimits, { 0: 0, 1: 1 });
    assert.match(formatRun(v), /could not fetch 1/);
  });

  test('the default budget of 0 failures: one node that cannot fetch halts the run as a revert would, FETCH_FAILED', async () => {
    const { c, nodes } = await fleetRun({});
    await answered(c, nodes[1]!, 'refused', 'FETCH_FAILED');
    const v = await view(c);
    assert.equal(v.status, 'halted');
    assert.equal(v.haltReason?.code, 'FETCH_FAILED');
    assert.match(v.haltReason?.message ?? '', /could not fetch web 1\.1\.0 \(FETCH_FAILED\): failure 1, over the budget of 0/);
  });

  test('more of a batch than --max-fetch-failures cannot fetch: the run halts, "the artifact cannot be fetched", in status and --json', async () => {
    const { c, nodes } = await fleetRun({ maxFailures: 10 });
    await answered(c, nodes[1]!, 'refused', 'FETCH_FAILED');
    assert.equal((await view(c)).status, 'running', 'one of five is within 20 %');
    await answered(c, nodes[2]!, 'refused', 'FETCH_FAILED');
    const v = await view(c);
    assert.equal(v.status, 'halted');
    assert.equal(v.haltReason?.code, 'TOO_MANY_FETCH_FAILURES');
    assert.equal(v.haltReason?.nodeId, nodes[2]!.nodeId);
    assert.match(v.haltReason?.message ?? '', /^the artifact cannot be fetched: 2 of the 5 nodes of batch 1 could not fetch web 1\.1\.0 .*over --max-fetch-failures 20%$/);
    assert.match(formatRun(v), /halted: TOO_MANY_FETCH_FAILURES: the artifact cannot be fetched/);
    // The halt is recorded: the stored run says so too, and the JSON the CLI prints carries it.
    const run = await c.store.read((tx) => tx.runs.latest('web'));
    assert.equal(run?.status, 'halted');
    assert.equal(run?.haltCode, 'TOO_MANY_FETCH_FAILURES');
    assert.equal(JSON.parse(JSON.stringify(v)).haltReason.code, 'TOO_MANY_FETCH_FAILURES');
  });

  test('--max-fetch-failures is kept by the run as given, and a bad one is a usage error', async () => {
    const { c } = await fleetRun({ maxFetchFailures: '1' });
    assert.equal((await c.store.read((tx) => tx.runs.latest('web')))?.maxFetchFailures, '1');
    for (const bad of ['', 'x', '-1', '150%', '0%']) {
      assert.throws(() => resolvePolicy({ maxFetchFailures: bad }), (err: { code?: string; message?: string }) => err.code === 'USAGE' && /--max-fetch-failures/.test(err.message ?? ''), bad);
    }
    assert.equal(resolvePolicy({ maxFetchFailures: '0' }).maxFetchFailures, '0');
    assert.equal(resolvePolicy({}).maxFetchFailures, '20%');
  });
});

// The CLI, as an operator types it: the flag on `rollout start` and `rollout retry`, and the halt
// in `rollout status` and its --json.
test('rollout start --max-fetch-failures reaches the run; rollout status and --json show it and the halt', async () => {
  const ctl = await startControlInProcess({ clock: new FakeClock(Date.now()) });
  try {
    const nodes = await enrollNodes(ctl, 6);
    for (const n of nodes) assert.equal((await n.heartbeat()).status, 200);
    await ctl.addRelease('web', '1.1.0');
    const cli = (...args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
        execFile(process.execPath, [path.join(REPO, 'bin', 'steward-control.js'), '--db', ctl.dbFile, ...args], { env: { ...process.env, DEBUG: '' } }, (err, stdout, stderr) => {
          const code = err ? (err as { code?: unknown }).code : 0;
          resolve({ code: typeof code === 'number' ? code : 1, stdout, stderr });
        }),
      );
    const bad = await cli('rollout', 'start', 'web', '1.1.0', '--max-fetch-failures', 'most');
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /USAGE: --max-fetch-failures "most" is not a count/);
    const started = await cli('--json', 'rollout', 'start', 'web', '1.1.0', '--canaries', '0', '--batch', '100%', '--bake', '0', '--max-failures', '6', '--max-fetch-failures', '1');
    assert.equal(started.code, 0, started.stderr);
    assert.equal(JSON.parse(started.stdout).maxFetchFailures, '1');
    await ctl.server.tick();
    for (const n of nodes.slice(0, 2)) await n.answer('refused', 'FETCH_FAILED');
    await ctl.server.tick();
    const human = await cli('rollout', 'status', 'web');
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /halted: TOO_MANY_FETCH_FAILURES: the artifact cannot be fetched: 2 of the 6 nodes of batch 1/);
    assert.match(human.stdout, /fetch failures per batch --max-fetch-failures 1/);
    const json = JSON.parse((await cli('--json', 'rollout', 'status', 'web')).stdout);
    const run = json.runs[0];
    assert.equal(run.haltReason.code, 'TOO_MANY_FETCH_FAILURES');
    assert.equal(run.maxFetchFailures, '1');
    assert.equal(run.counts.fetchFailed, 2);
    const retried = await cli('--json', 'rollout', 'retry', 'web', '--bake', '0', '--max-fetch-failures', '50%');
    assert.equal(retried.code, 0, retried.stderr);
    assert.equal(JSON.parse(retried.stdout).maxFetchFailures, '50%');
  } finally {
    await ctl.close();
  }
});

describeEachBackend((backend) => {
  test('a node whose heartbeat (v6) says its download waits to be tried again is shown issued, FETCH_RETRYING', async () => {
    const ctl = await startControlOn(backend);
    try {
      const nodes = await enrollNodes(ctl, 2);
      for (const n of nodes) assert.equal((await n.heartbeat()).status, 200);
      nodes.sort((x, y) => (x.nodeId < y.nodeId ? -1 : 1));
      await ctl.addRelease('web', '1.1.0');
      await startRun(ctl.store, 'web', '1.1.0', { canary: [nodes[0]!.nodeId], bakeMs: 0 });
      const [n0] = nodes as [FakeNode];
      const first = await n0.heartbeat();
      const attemptId = (first.body.desired as Array<{ attemptId: string }>)[0]!.attemptId;
      const stateOf = async () => (await ctl.store.read(async (tx) => describeRun(tx, (await tx.runs.latest('web'))!))).nodes.find((x) => x.nodeId === n0.nodeId)!;
      assert.deepEqual([(await stateOf()).state, (await stateOf()).reason], ['issued', null]);
      const retrying = await n0.heartbeat({ v: 6, apps: [{ name: 'web', current: '1.0.0', previous: null, held: false, blocked: false, supervisor: { state: 'running', attempts: 0, since: null }, fetchRetrying: { attemptId } }] });
      assert.equal(retrying.status, 200, JSON.stringify(retrying.body));
      assert.deepEqual([(await stateOf()).state, (await stateOf()).reason], ['issued', 'FETCH_RETRYING']);
      // Another attempt's retry (an operator's update) says nothing about this run's.
      await n0.heartbeat({ v: 6, apps: [{ name: 'web', current: '1.0.0', previous: null, held: false, blocked: false, supervisor: { state: 'running', attempts: 0, since: null }, fetchRetrying: { attemptId: 'manual-7' } }] });
      assert.equal((await stateOf()).reason, null);
    } finally {
      await ctl.close();
    }
  });
});
