// A node whose clock is off has its heartbeats refused (422 CLOCK_SKEW); operators see it where
// they look (issue 31, item 7): `nodes` and `nodes --json`, the admin API the dashboard reads,
// the metrics, and the rollouts, which name it CLOCK_SKEW rather than NO_RECENT_HEARTBEAT. A
// node's staleness follows one rule (3 heartbeat intervals) in `nodes`, the metrics and a run.
// On both store backends.
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { operatorAdd } from '../../src/control/operations/operator-ops.js';
import { runOperation } from '../../src/control/operations/operations.js';
import { describeRun, type RunStatusView } from '../../src/control/rollouts/run-status.js';
import { dryRunStart, startRun } from '../../src/control/rollouts/start-run.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { adminCall } from '../helpers/admin-client.js';
import { enrollNodes, MINUTE, request, startControlInProcess, startControlOn, type Control, type FakeNode } from '../helpers/control-harness.js';
import { REPO } from '../helpers/host.js';
import { valueOf } from '../helpers/prom-text.js';
import { describeEachBackend } from '../helpers/store-backends.js';

const BIN = path.join(REPO, 'bin', 'steward-control.js');
const GAUGE = 'steward_control_clock_skew_refused_nodes';

// `steward-control --db <the control plane's database> ...args`: its stdout (parsed with --json).
function cli(c: Control<ControlStore>, ...args: string[]): Promise<any> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [BIN, '--db', c.dbFile, '--artifacts', path.join(c.dir, 'artifacts'), ...args], { env: { ...process.env, DEBUG: '' } }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`steward-control ${args.join(' ')}: ${err.message}\n${stdout}${stderr}`));
      resolve(args.includes('--json') ? JSON.parse(stdout) : stdout);
    });
  });
}

async function viewerToken(c: Control<ControlStore>): Promise<string> {
  const r = await runOperation({ store: c.store, actor: { operator: 'local:test', role: 'admin', source: null }, artifactsDir: path.join(c.dir, 'artifacts') }, operatorAdd, { name: 'vera', role: 'viewer' });
  return r.token;
}

async function scrape(c: Control<ControlStore>): Promise<string> {
  const a = await request(c.metricsUrl!, '/metrics', 'GET');
  assert.equal(a.status, 200);
  return a.raw.toString('utf8');
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const byId = (nodes: Array<{ nodeId: string }>) => new Map<string, any>(nodes.map((n) => [n.nodeId, n]));
const lineOf = (text: string, n: FakeNode) => text.split('\n').find((l) => l.startsWith(n.nodeId)) ?? '';

async function view(c: Control<ControlStore>): Promise<RunStatusView> {
  return c.store.read(async (tx) => describeRun(tx, (await tx.runs.latest('web'))!));
}
const nodeOf = (v: RunStatusView, n: FakeNode) => {
  const x = v.nodes.find((y) => y.nodeId === n.nodeId)!;
  return { state: x.state, reason: x.reason };
};

describeEachBackend((backend) => {
  let c: Control<ControlStore> | null = null;
  afterEach(async () => {
    await c?.close();
    c = null;
  });

  test('a node whose heartbeats are refused for clock skew shows its skew and since when in nodes, nodes --json, the admin API and the metrics, until one is accepted again', async () => {
    c = await startControlOn(backend, { metrics: {}, admin: {} });
    const viewer = await viewerToken(c);
    const [good, skewed] = (await enrollNodes(c, 2)) as [FakeNode, FakeNode];
    for (const n of [good, skewed]) assert.equal((await n.heartbeat()).status, 200);
    assert.equal(valueOf(await scrape(c), GAUGE), 0);

    c.clock.advance(MINUTE);
    const refusedAt = c.clock.now();
    const refused = await skewed.heartbeat({ sentAt: refusedAt - 10 * MINUTE });
    assert.deepEqual([refused.status, refused.body.error.code], [422, 'CLOCK_SKEW']);
    assert.equal((await good.heartbeat()).status, 200);
    const expected = { since: refusedAt, lastAt: refusedAt, clockSkewMs: -10 * MINUTE };

    const json = byId((await cli(c, 'nodes', '--json')).nodes);
    assert.deepEqual(json.get(skewed.nodeId).clockSkewRefused, expected);
    assert.equal(json.get(skewed.nodeId).clockSkewMs, 0, 'the skew of its last accepted heartbeat stays');
    assert.equal(json.get(good.nodeId).clockSkewRefused, null);
    const human = await cli(c, 'nodes');
    assert.ok(lineOf(human, skewed).includes(`-10m00s, refused heartbeats since ${iso(refusedAt)}`), human);
    assert.ok(!lineOf(human, good).includes('refused'), human);
    const api = await adminCall(c.server.url, '/v1/admin/nodes', { token: viewer });
    assert.equal(api.status, 200);
    assert.deepEqual(byId(api.body.nodes).get(skewed.nodeId).clockSkewRefused, expected);
    assert.equal(byId(api.body.nodes).get(good.nodeId).clockSkewRefused, null);
    assert.equal(valueOf(await scrape(c), GAUGE), 1);

    // Another refused heartbeat a minute later, further off: the same refusal, its skew now.
    c.clock.advance(MINUTE);
    assert.equal((await skewed.heartbeat({ sentAt: c.clock.now() + 20 * MINUTE })).status, 422);
    assert.deepEqual(byId((await cli(c, 'nodes', '--json')).nodes).get(skewed.nodeId).clockSkewRefused, { since: refusedAt, lastAt: c.clock.now(), clockSkewMs: 20 * MINUTE });

    // Its clock fixed: the next heartbeat is accepted and the refusal is gone everywhere.
    assert.equal((await skewed.heartbeat()).status, 200);
    assert.equal(byId((await cli(c, 'nodes', '--json')).nodes).get(skewed.nodeId).clockSkewRefused, null);
    assert.ok(!lineOf(await cli(c, 'nodes'), skewed).includes('refused'));
    assert.equal(byId((await adminCall(c.server.url, '/v1/admin/nodes', { token: viewer })).body.nodes).get(skewed.nodeId).clockSkewRefused, null);
    assert.equal(valueOf(await scrape(c), GAUGE), 0);
  });

  test('a rollout names a node whose heartbeats are refused for clock skew CLOCK_SKEW, where a silent node is NO_RECENT_HEARTBEAT, and says so of a node it waits for', async () => {
    c = await startControlOn(backend);
    const nodes = (await enrollNodes(c, 4)) as FakeNode[];
    for (const n of nodes) assert.equal((await n.heartbeat()).status, 200);
    const [fresh, skewed, silent, canary] = nodes as [FakeNode, FakeNode, FakeNode, FakeNode];
    await c.addRelease('web', '1.1.0');
    // Four intervals on: the skewed node is refused, the silent one sends nothing.
    c.clock.advance(4 * 30_000);
    for (const n of [fresh, canary]) assert.equal((await n.heartbeat()).status, 200);
    assert.equal((await skewed.heartbeat({ sentAt: c.clock.now() - 7 * MINUTE })).status, 422);

    const dry = (await dryRunStart(c.store, 'web', '1.1.0', { canary: [canary.nodeId] })).simulation.first.nodes;
    assert.deepEqual([dry[skewed.nodeId]?.reason, dry[silent.nodeId]?.reason], ['CLOCK_SKEW', 'NO_RECENT_HEARTBEAT'], 'the dry run says the same');
    await assert.rejects(startRun(c.store, 'web', '1.1.0', { canary: [skewed.nodeId] }), /skipped \(CLOCK_SKEW\)/, 'naming it canary is refused, with the reason');
    await startRun(c.store, 'web', '1.1.0', { canary: [canary.nodeId] });
    let v = await view(c);
    assert.deepEqual(nodeOf(v, skewed), { state: 'skipped', reason: 'CLOCK_SKEW' });
    assert.deepEqual(nodeOf(v, silent), { state: 'skipped', reason: 'NO_RECENT_HEARTBEAT' });
    assert.deepEqual(nodeOf(v, canary), { state: 'issued', reason: null });
    assert.deepEqual(nodeOf(v, fresh), { state: 'pending', reason: null });

    // The canary's clock jumps: the run waits for a verdict its heartbeats cannot bring, and says why.
    assert.equal((await canary.heartbeat({ sentAt: c.clock.now() + 6 * MINUTE })).status, 422);
    v = await view(c);
    assert.deepEqual(nodeOf(v, canary), { state: 'issued', reason: 'CLOCK_SKEW' });
    assert.deepEqual(nodeOf(v, fresh), { state: 'pending', reason: null });

    // Fixed clocks: the canary goes on; the skipped node stays skipped (the run froze its
    // targets), now only for having been silent at the start.
    assert.equal((await skewed.heartbeat()).status, 200);
    assert.equal((await canary.heartbeat()).status, 200);
    v = await view(c);
    assert.deepEqual(nodeOf(v, canary), { state: 'issued', reason: null });
    assert.deepEqual(nodeOf(v, skewed), { state: 'skipped', reason: 'NO_RECENT_HEARTBEAT' });
  });

  test('a node is stale in nodes, the admin API and the metrics, and skipped by a run, by the same rule: no heartbeat within 3 intervals', async () => {
    c = await startControlOn(backend, { metrics: {}, admin: {}, heartbeatSeconds: 10 });
    const viewer = await viewerToken(c);
    const [n, other] = (await enrollNodes(c, 2)) as [FakeNode, FakeNode];
    assert.equal((await n.heartbeat()).status, 200);
    await c.addRelease('web', '1.1.0');
    const seen = async () => {
      // Another node, always fresh: the dry run has a target whatever n's state.
      assert.equal((await other.heartbeat()).status, 200);
      const api = byId((await adminCall(c!.server.url, '/v1/admin/nodes', { token: viewer })).body.nodes).get(n.nodeId);
      const cliNode = byId((await cli(c!, 'nodes', '--json')).nodes).get(n.nodeId);
      const metrics = await scrape(c!);
      const plan = (await dryRunStart(c!.store, 'web', '1.1.0', {})).simulation.first.nodes[n.nodeId]!;
      return { api: api.stale, metricsStale: valueOf(metrics, 'steward_control_nodes', { freshness: 'stale' }), run: plan.state, cliHasStale: typeof cliNode.stale };
    };
    // 3 intervals of 10 s on: still fresh (the bound is in). (`nodes` runs on the wall clock,
    // not this test's: only the field's presence is checked there.)
    c.clock.advance(30_000);
    assert.deepEqual(await seen(), { api: false, metricsStale: 0, run: 'pending', cliHasStale: 'boolean' });
    // A millisecond past it: stale everywhere, long before the 3 minutes the dashboard used to take.
    c.clock.advance(1);
    assert.deepEqual(await seen(), { api: true, metricsStale: 1, run: 'skipped', cliHasStale: 'boolean' });
  });
});

test('a refusal on record older than the last accepted heartbeat (one a steward-control of schema 4 accepted, not knowing the columns) no longer counts', async () => {
  const d = await startControlInProcess({ metrics: {} });
  try {
    const [n] = (await enrollNodes(d, 1)) as [FakeNode];
    assert.equal((await n.heartbeat()).status, 200);
    d.clock.advance(MINUTE);
    assert.equal((await n.heartbeat({ sentAt: d.clock.now() + 10 * MINUTE })).status, 422);
    const refused = async () => (await d.store.read((tx) => tx.nodes.get(n.nodeId)))?.clockSkewRefused ?? null;
    assert.notEqual(await refused(), null);
    // What an instance of schema 4 writes for an accepted heartbeat.
    d.store.db.prepare('UPDATE nodes SET lastSeq = lastSeq + 1, lastHeartbeatAt = ? WHERE nodeId = ?').run(d.clock.now() + 1, n.nodeId);
    assert.equal(await refused(), null);
    assert.equal(await d.store.read((tx) => tx.nodes.countClockSkewRefused()), 0);
    // Refused again: a new refusal from then, not held back by the gap.
    d.clock.advance(2);
    assert.equal((await n.heartbeat({ sentAt: d.clock.now() + 10 * MINUTE })).status, 422);
    assert.deepEqual(await refused(), { since: d.clock.now(), lastAt: d.clock.now(), clockSkewMs: 10 * MINUTE });
  } finally {
    await d.close();
  }
});
