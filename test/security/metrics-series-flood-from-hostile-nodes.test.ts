// The attack: enrolled nodes, or a node whose helper key was stolen, report what they like to
// make the control plane's metrics grow a series for every value (10,000 apps and versions;
// receipts with 10,000 made-up reason codes), until Prometheus or the control plane runs out of
// memory. Every label value is from a closed set or checked against its rule and capped
// (src/control/metrics/label-values.ts): the scrape stays a few hundred lines.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { boundAppVersions, MAX_APPS, MAX_VERSIONS_PER_APP, OTHER, OTHER_APP } from '../../src/control/metrics/label-values.js';
import { MAX_HEARTBEAT_RECEIPTS } from '../../src/core/heartbeat-limits.js';
import { enrollNodes, FakeNode, request, startControlInProcess } from '../helpers/control-harness.js';
import { assertPromtoolPasses, samplesOf, valueOf } from '../helpers/prom-text.js';

const APPS_PER_NODE = 250;
const HOSTILE_NODES = 40;

test('10,000 apps and versions and 10,000 reason codes from hostile nodes make a bounded number of series', async (t) => {
  const c = await startControlInProcess({ metrics: {} });
  try {
    const honest = await enrollNodes(c, 2);
    for (const n of honest) assert.equal((await n.heartbeat()).status, 200);
    // 40 nodes, each 250 apps of its own at a version of its own: 10,000 apps and versions.
    const hostile: FakeNode[] = [];
    for (let i = 0; i < HOSTILE_NODES; i++) {
      const n = await new FakeNode(c, `hostile-${i}`).enroll();
      n.apps = Array.from({ length: APPS_PER_NODE }, (_, j) => ({ name: `a${i}-${j}`, current: `${i}.${j}.0-x${i * APPS_PER_NODE + j}` }));
      assert.equal((await n.heartbeat()).status, 200);
      hostile.push(n);
    }
    // And one of them: a version of web never seen before in every heartbeat, and 10,000
    // receipts, each with a reason code of its own, signed with its helper key.
    const flood = hostile[0]!;
    let receipts = 0;
    for (let h = 0; receipts < 10_000; h++) {
      flood.apps = [{ name: 'web', current: `9.9.${h}` }];
      const batch = Array.from({ length: Math.min(MAX_HEARTBEAT_RECEIPTS, 10_000 - receipts) }, () => {
        receipts++;
        return flood.receipt({ attemptId: `x-${receipts}`, outcome: 'refused', targetVersion: null, reason: { code: `CODE_${receipts}`, message: 'x' } });
      });
      assert.equal((await flood.heartbeat({ receipts: batch })).status, 200);
    }

    const text = (await request(c.metricsUrl!, '/metrics', 'GET')).raw.toString('utf8');
    assertPromtoolPasses(t, text);
    const samples = samplesOf(text);
    const perApp = samples.filter((s) => s.name === 'steward_control_app_version_nodes');
    assert.ok(perApp.length <= MAX_APPS * (MAX_VERSIONS_PER_APP + 2) + 1, `${perApp.length} app/version series`);
    assert.equal(new Set(perApp.map((s) => s.labels.app)).size, MAX_APPS + 1, 'the capped apps and _other');
    // Every node is still counted: the rest is summed, not dropped.
    assert.equal(perApp.reduce((a, s) => a + s.value, 0), honest.length + HOSTILE_NODES * APPS_PER_NODE - APPS_PER_NODE + 1);
    assert.equal(valueOf(text, 'steward_control_app_version_nodes', { app: 'web', version: '1.0.0' }), 2, 'the app on the most nodes keeps its versions');
    assert.ok(valueOf(text, 'steward_control_app_version_nodes', { app: OTHER_APP, version: OTHER })! > 9_000);
    const receiptSeries = samples.filter((s) => s.name === 'steward_control_receipts_total');
    assert.deepEqual(receiptSeries.map((s) => s.labels), [{ outcome: 'refused', reason: OTHER }]);
    assert.equal(receiptSeries[0]!.value, 10_000);
    assert.ok(samples.length < 1_000, `${samples.length} samples in one scrape`);
  } finally {
    await c.close();
  }
});

test('names and versions outside their rules in the store become no label value', () => {
  const rows = [
    { app: 'web', version: '1.0.0"} evil 1\n# x', nodes: 3 },
    { app: 'Web\n', version: '1.0.0', nodes: 2 },
    { app: 'web', version: null, nodes: 1 },
    { app: 'web', version: '1.0.0', nodes: 4 },
  ];
  assert.deepEqual(boundAppVersions(rows), [
    { app: 'web', version: '1.0.0', nodes: 4 },
    { app: 'web', version: 'none', nodes: 1 },
    { app: 'web', version: OTHER, nodes: 3 },
    { app: OTHER_APP, version: OTHER, nodes: 2 },
  ]);
});

test('past the caps, the apps and versions on the most nodes keep their series, ties by name, the same on every instance', () => {
  const rows = [
    { app: 'b', version: '1.0.0', nodes: 5 },
    { app: 'a', version: '1.0.0', nodes: 5 },
    { app: 'c', version: '1.0.0', nodes: 1 },
    { app: 'a', version: '2.0.0', nodes: 1 },
    { app: 'a', version: '3.0.0', nodes: 2 },
  ];
  const out = boundAppVersions(rows, 2, 1);
  assert.deepEqual(out, [
    { app: 'a', version: '1.0.0', nodes: 5 },
    { app: 'a', version: OTHER, nodes: 3 },
    { app: 'b', version: '1.0.0', nodes: 5 },
    { app: OTHER_APP, version: OTHER, nodes: 1 },
  ]);
  assert.deepEqual(boundAppVersions([...rows].reverse(), 2, 1), out, 'the order rows come in changes nothing');
});
