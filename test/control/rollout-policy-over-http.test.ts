// The rollout policy of docs/design.md §11 through the real control plane: fake nodes enroll with
// labelled tokens and heartbeat over HTTP; the fake clock drives bakes, windows and ticks.
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { describeRun, type RunStatusView } from '../../src/control/rollouts/run-status.js';
import { dryRunRetry, dryRunStart, pauseRun, retryRun, startRun } from '../../src/control/rollouts/start-run.js';
import { dumpStore, FakeClock, FakeNode, MINUTE, startControlInProcess, type Control } from '../helpers/control-harness.js';

let c: Control | null = null;
afterEach(async () => {
  await c?.close();
  c = null;
});

// A control plane with nodes labelled as given (each reports web 1.0.0 unless `app` is false).
async function fleet(specs: Array<{ env: string; app?: boolean }>, clock?: FakeClock): Promise<{ c: Control; nodes: FakeNode[] }> {
  c = await startControlInProcess(clock ? { clock } : {});
  const nodes: FakeNode[] = [];
  for (const [i, s] of specs.entries()) {
    const n = await new FakeNode(c, `${s.env}-${i}`).enroll(await c.token(3_600_000, { env: s.env }));
    if (s.app !== false) n.setCurrent('web', '1.0.0');
    else n.setCurrent('db', '3.0.0');
    assert.equal((await n.heartbeat()).status, 200);
    nodes.push(n);
  }
  await c.addRelease('web', '1.1.0');
  return { c, nodes };
}

async function view(ctl: Control): Promise<RunStatusView> {
  return ctl.store.read(async (tx) => describeRun(tx, (await tx.runs.latest('web'))!));
}
const stateOf = (v: RunStatusView, n: FakeNode) => v.nodes.find((x) => x.nodeId === n.nodeId)?.state;

test('a run targets only the selected nodes that report the app: the others are not-targeted, never asked, and the run succeeds', async () => {
  const { c, nodes } = await fleet([{ env: 'prod' }, { env: 'prod', app: false }, { env: 'staging' }]);
  const [web, noWeb, staging] = nodes as [FakeNode, FakeNode, FakeNode];
  await startRun(c.store, 'web', '1.1.0', { selector: 'env=prod', bakeMs: 0 });
  let v = await view(c);
  const byId = (x: unknown[], y: unknown[]) => (String(x[0]) < String(y[0]) ? -1 : 1);
  assert.deepEqual(v.nodes.map((n) => [n.nodeId, n.state, n.reason]), [[web.nodeId, 'issued', null], [noWeb.nodeId, 'not-targeted', 'APP_NOT_ON_NODE']].sort(byId));
  assert.deepEqual([v.counts.targeted, v.counts.notTargeted], [1, 1]);
  assert.equal(v.nodes.some((n) => n.nodeId === staging.nodeId), false, 'a node the selector does not match is not in the run');
  for (const n of [noWeb, staging]) assert.deepEqual((await n.heartbeat()).body.desired, []);
  await web.answer('active');
  v = await view(c);
  assert.deepEqual([v.status, v.counts.confirmed], ['succeeded', 1]);
  await assert.rejects(startRun(c.store, 'web', '1.1.0', { selector: 'env=qa' }), /matches none of the 3 enrolled nodes/);
  await assert.rejects(startRun(c.store, 'web', '1.1.0', { selector: 'env=prod', canary: [noWeb.nodeId] }), /not-targeted \(APP_NOT_ON_NODE\)/);
});

test('a node already reporting the version is shown already-current, never issued and not counted as confirmed', async () => {
  const { c, nodes } = await fleet([{ env: 'prod' }, { env: 'prod' }]);
  const [a, b] = nodes as [FakeNode, FakeNode];
  b.setCurrent('web', '1.1.0');
  await b.heartbeat();
  await startRun(c.store, 'web', '1.1.0', { bakeMs: 0 });
  await a.answer('active');
  const v = await view(c);
  assert.deepEqual([v.status, stateOf(v, b), v.counts.confirmed, v.counts.alreadyCurrent], ['succeeded', 'already-current', 1, 1]);
  assert.equal(v.nodes.find((n) => n.nodeId === b.nodeId)?.attemptId, null);
});

test('a dry run writes nothing, and a real run started at once with its seed issues the batches it showed, in order', async () => {
  const { c, nodes } = await fleet(Array.from({ length: 7 }, () => ({ env: 'prod' })));
  const opts = { canaries: 2, batch: '50%', bakeMs: 0, seed: 4242 };
  const before = dumpStore(c.store);
  const dry = await dryRunStart(c.store, 'web', '1.1.0', opts);
  assert.deepEqual(dumpStore(c.store), before, 'a dry run writes nothing');
  assert.deepEqual(dry.simulation.batches.map((b) => [b.batch, b.nodes.length]), [[0, 2], [1, 4], [2, 1]]);
  await startRun(c.store, 'web', '1.1.0', opts);
  const seen: Array<[number, string[]]> = [];
  for (let round = 0; round < 5; round++) {
    const v = await view(c);
    const issuedNow = v.nodes.filter((n) => n.state === 'issued');
    if (issuedNow.length === 0) break;
    seen.push([issuedNow[0]!.batch!, issuedNow.map((n) => n.nodeId)]);
    for (const n of nodes) if (issuedNow.some((x) => x.nodeId === n.nodeId)) await n.answer('active');
  }
  assert.deepEqual(seen, dry.simulation.batches.map((b) => [b.batch, [...b.nodes].sort()]));
  assert.equal((await view(c)).status, 'succeeded');
});

test('pause stops issuing (the status says paused), resume issues again; a verdict while paused still counts', async () => {
  const { c, nodes } = await fleet([{ env: 'prod' }, { env: 'prod' }, { env: 'prod' }]);
  await startRun(c.store, 'web', '1.1.0', { bakeMs: 0, batch: '1' });
  const first = (await view(c)).canaryNodes[0]!;
  await pauseRun(c.store, 'web', true);
  await nodes.find((n) => n.nodeId === first)!.answer('active');
  let v = await view(c);
  assert.deepEqual([v.status, v.paused, v.counts.confirmed, v.nodes.filter((n) => n.state === 'issued').length], ['paused', true, 1, 0]);
  for (const n of nodes) assert.deepEqual((await n.heartbeat()).body.desired, []);
  await pauseRun(c.store, 'web', false);
  v = await view(c);
  assert.deepEqual([v.status, v.nodes.filter((n) => n.state === 'issued').length], ['running', 1]);
});

test('a window: attempts carry notAfter, none is sent after it, the run waits for the next window and resumes there', async () => {
  // 2026-06-01 (a Monday) 02:10 UTC; the window is 02:00-03:00 every day.
  const clock = new FakeClock(Date.parse('2026-06-01T02:10:00Z'));
  const { c, nodes } = await fleet([{ env: 'prod' }, { env: 'prod' }, { env: 'prod' }], clock);
  await startRun(c.store, 'web', '1.1.0', { bakeMs: 0, batch: '1', windows: ['daily 02:00-03:00'], verdictTimeoutMs: 90 * MINUTE });
  const holder = (await view(c)).canaryNodes[0]!;
  const h = nodes.find((n) => n.nodeId === holder)!;
  const d = (await h.heartbeat()).body.desired;
  assert.deepEqual([d.length, d[0].notAfter], [1, Date.parse('2026-06-01T03:00:00Z')]);
  // The window closes before the canary answers: the attempt is no longer sent.
  clock.advance(51 * MINUTE);
  await c.server.tick();
  assert.deepEqual((await h.heartbeat()).body.desired, [], 'not sent after its notAfter');
  let v = await view(c);
  assert.deepEqual([v.status, v.nextWindowAt], ['waiting', Date.parse('2026-06-02T02:00:00Z')]);
  // It ran before the window closed, and its receipt counts; nothing else is issued until the next window.
  await h.heartbeat({ receipts: [h.receipt({ attemptId: d[0].attemptId, targetVersion: '1.1.0' })] });
  await c.server.tick();
  v = await view(c);
  assert.deepEqual([v.status, v.counts.confirmed, v.nodes.filter((n) => n.state === 'issued').length], ['waiting', 1, 0]);
  clock.t = Date.parse('2026-06-02T02:00:00Z');
  await c.server.tick();
  v = await view(c);
  assert.deepEqual([v.status, v.nodes.filter((n) => n.state === 'issued').map((n) => n.notAfter)], ['running', [Date.parse('2026-06-02T03:00:00Z')]]);
});

test('--start-at: the run is scheduled and issues nothing before it', async () => {
  const { c, nodes } = await fleet([{ env: 'prod' }]);
  await startRun(c.store, 'web', '1.1.0', { bakeMs: 0, startAt: c.clock.now() + 60 * MINUTE });
  assert.equal((await view(c)).status, 'scheduled');
  assert.deepEqual((await nodes[0]!.heartbeat()).body.desired, []);
  c.clock.advance(60 * MINUTE);
  await c.server.tick();
  assert.equal((await nodes[0]!.heartbeat()).body.desired.length, 1);
});

test('the nodes behind the last succeeded run are listed and counted; retry --behind targets only them', async () => {
  const { c, nodes } = await fleet([{ env: 'prod' }, { env: 'prod' }]);
  await startRun(c.store, 'web', '1.1.0', { bakeMs: 0, batch: '100%', canaries: 0 });
  for (const n of nodes) await n.answer('active');
  assert.equal((await view(c)).status, 'succeeded');
  await assert.rejects(retryRun(c.store, 'web', {}), { code: 'NOTHING_TO_RETRY' });
  // A node enrolled later, and one an operator took back to 1.0.0.
  const late = await new FakeNode(c, 'late').enroll(await c.token(3_600_000, { env: 'prod' }));
  late.setCurrent('web', '1.0.0');
  await late.heartbeat();
  nodes[1]!.setCurrent('web', '1.0.0');
  await nodes[1]!.heartbeat();
  const v = await view(c);
  assert.deepEqual([v.counts.behind, v.behind.map((b) => b.nodeId).sort()], [2, [late.nodeId, nodes[1]!.nodeId].sort()]);
  const dry = await dryRunRetry(c.store, 'web', { bakeMs: 0 }, true);
  assert.deepEqual(Object.keys(dry.simulation.first.nodes).sort(), [late.nodeId, nodes[1]!.nodeId].sort());
  const run = await retryRun(c.store, 'web', { bakeMs: 0 }, true);
  assert.deepEqual([run.retryOf, run.behind, run.version], [1, true, '1.1.0']);
  assert.equal((await nodes[0]!.heartbeat()).body.desired.length, 0, 'a node not behind is not asked');
});

test('retry starts with the failure budget its run spent', async () => {
  const { c, nodes } = await fleet([{ env: 'prod' }, { env: 'prod' }, { env: 'prod' }]);
  await startRun(c.store, 'web', '1.1.0', { bakeMs: 0, batch: '1', canaries: 0, maxFailures: 1 });
  // Batch 1 is the lowest nodeId; it rolls back (1 of the budget of 1), batch 2 confirms, batch 3 rolls back: halted.
  const order = [...nodes].sort((x, y) => (x.nodeId < y.nodeId ? -1 : 1));
  await order[0]!.answer('rolled-back', 'REPLACEMENT_UNHEALTHY');
  await order[1]!.answer('active');
  await order[2]!.answer('rolled-back', 'REPLACEMENT_UNHEALTHY');
  let v = await view(c);
  assert.deepEqual([v.status, v.failures], ['halted', 2]);
  await retryRun(c.store, 'web', { allowRetryReverted: true, maxFailures: 2 });
  v = await view(c);
  assert.deepEqual([v.failures, v.retryOf], [2, 1]);
});
