// The attack: the metrics listener has no TLS and no authentication (a scraper on a private
// network reads it). If it answered the fleet's routes, a node, or someone on that network,
// could enroll, heartbeat or fetch artifacts over plain http beside the fleet listener's TLS,
// and if it answered an operator's routes, change the fleet. It serves /metrics, /healthz and
// /readyz and nothing else; and the fleet listener, which nodes reach, serves no /metrics.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ARTIFACTS_PREFIX, ENROLL_PATH, HEARTBEAT_PATH } from '../../src/core/control-api.js';
import { dumpStore, enrollNodes, FakeNode, post, request, startControlInProcess } from '../helpers/control-harness.js';

test('the metrics listener answers no fleet or admin route, and the fleet listener no /metrics', async () => {
  const c = await startControlInProcess({ metrics: {} });
  try {
    await c.addRelease('web', '1.1.0');
    const [node] = (await enrollNodes(c, 1)) as [FakeNode];
    const metricsUrl = c.metricsUrl!;
    const token = await c.token();
    const before = dumpStore(c.store);
    const stranger = new FakeNode(c, 'stranger');
    // A good enrollment, a good heartbeat, a real artifact, admin and dashboard paths: all 404.
    assert.equal((await post(metricsUrl, ENROLL_PATH, stranger.enrollBody(token))).status, 404);
    assert.equal((await post(metricsUrl, HEARTBEAT_PATH, node.body())).status, 404);
    const artifact = `${ARTIFACTS_PREFIX}web/1.1.0.tgz`;
    for (const p of [artifact, '/v1/admin/nodes', '/ui/', '/', '/metrics/../v1/heartbeat']) {
      assert.equal((await request(metricsUrl, p, 'GET')).status, 404, p);
    }
    assert.deepEqual(dumpStore(c.store), before, 'nothing the metrics listener was sent reached the store');
    // The fleet listener: the same heartbeat and artifact are served there, and /metrics is not.
    assert.equal((await post(c.server.url, HEARTBEAT_PATH, node.body())).status, 200);
    assert.equal((await request(c.server.url, artifact, 'GET')).status, 200);
    assert.equal((await request(c.server.url, '/metrics', 'GET')).status, 404);
    assert.equal((await request(metricsUrl, '/metrics', 'GET')).status, 200);
  } finally {
    await c.close();
  }
});
