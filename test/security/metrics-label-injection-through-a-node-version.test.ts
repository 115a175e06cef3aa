// The attack: a node (its key stolen, or its agent rewritten) reports an app version made to
// break out of the exposition format (`1.0.0"} steward_control_nodes{freshness="fresh"} 1e9`,
// a newline, a version past the length limit), hoping it becomes a label value of
// steward_control_app_version_nodes and forges samples in every scrape. A version is checked
// against the version rule before it becomes a label value: the heartbeat that carries one is
// refused, and one that is in the store anyway (written by another program, a restored backup)
// is counted as version "other", never named.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HEARTBEAT_PATH } from '../../src/core/control-api.js';
import { MAX_VERSION_LENGTH } from '../../src/core/version.js';
import { enrollNodes, FakeNode, post, request, startControlInProcess } from '../helpers/control-harness.js';
import { assertPromtoolPasses, samplesOf, valueOf } from '../helpers/prom-text.js';

const EVIL = [
  '1.0.0"} steward_control_nodes{freshness="fresh"} 1e9\n# x',
  '1.0.0\nsteward_control_runs{status="halted"} 7',
  `1.0.0-${'a'.repeat(MAX_VERSION_LENGTH)}`,
  '1.0.0\\',
];

test('a version that breaks the version rule never becomes a label value', async (t) => {
  const c = await startControlInProcess({ metrics: {} });
  try {
    const [honest, hostile] = (await enrollNodes(c, 2)) as [FakeNode, FakeNode];
    assert.equal((await honest.heartbeat()).status, 200);
    for (const v of EVIL) {
      hostile.setCurrent('web', v);
      assert.equal((await post(c.server.url, HEARTBEAT_PATH, hostile.body())).status, 400, `a heartbeat reporting ${JSON.stringify(v)} is refused`);
    }
    // The same versions in the store, as another program could have written them.
    const apps = EVIL.map((v, i) => ({ name: i === 0 ? 'web' : `app${i}`, current: v, previous: null, held: false, blocked: false, supervisor: { state: 'running', attempts: 0, since: null } }));
    c.store.db.prepare('UPDATE nodes SET apps = ?, lastHeartbeatAt = ? WHERE nodeId = ?').run(JSON.stringify(apps), c.clock.now(), hostile.nodeId);

    const text = (await request(c.metricsUrl!, '/metrics', 'GET')).raw.toString('utf8');
    assertPromtoolPasses(t, text);
    const perApp = samplesOf(text).filter((s) => s.name === 'steward_control_app_version_nodes');
    for (const s of perApp) assert.ok(!EVIL.includes(s.labels.version!), `no label value ${JSON.stringify(s.labels.version)}`);
    assert.deepEqual(
      perApp.map((s) => [s.labels.app, s.labels.version, s.value]).sort(),
      [['app1', 'other', 1], ['app2', 'other', 1], ['app3', 'other', 1], ['web', '1.0.0', 1], ['web', 'other', 1]],
    );
    // Nothing forged: one sample of each name and labels, the real values.
    assert.equal(valueOf(text, 'steward_control_nodes', { freshness: 'fresh' }), 2);
    assert.equal(valueOf(text, 'steward_control_runs', { status: 'halted' }), 0);
    assert.equal(valueOf(text, 'steward_control_heartbeats_total', { result: 'BAD_BODY' }), EVIL.length, 'the refusals are counted');
  } finally {
    await c.close();
  }
});
