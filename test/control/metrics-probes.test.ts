// `GET /healthz` (the process serves) and `GET /readyz` (the store answers a trivial read within a
// timeout), docs/design.md §12, on the metrics listener and on the fleet listener alike.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { startMetricsServer } from '../../src/control/metrics/metrics-server.js';
import { request, startControlInProcess } from '../helpers/control-harness.js';

test('healthz and readyz answer 200 on both listeners while the store answers', async () => {
  const c = await startControlInProcess({ metrics: {} });
  try {
    for (const url of [c.server.url, c.metricsUrl!]) {
      for (const [p, body] of [['/healthz', 'ok\n'], ['/readyz', 'ready\n']] as const) {
        const a = await request(url, p, 'GET');
        assert.deepEqual([a.status, a.raw.toString()], [200, body], `${url}${p}`);
        assert.equal(a.headers['cache-control'], 'no-store');
      }
      const head = await request(url, '/readyz', 'HEAD');
      assert.deepEqual([head.status, head.raw.length], [200, 0]);
      const post = await request(url, '/readyz', 'POST', '{}');
      assert.equal(post.status, 405);
    }
  } finally {
    await c.close();
  }
});

test('once the store cannot answer, readyz says 503 on both listeners and healthz still 200', async () => {
  const c = await startControlInProcess({ metrics: {} });
  try {
    await c.store.close();
    for (const url of [c.server.url, c.metricsUrl!]) {
      assert.equal((await request(url, '/readyz', 'GET')).status, 503, `${url}/readyz`);
      assert.equal((await request(url, '/healthz', 'GET')).status, 200, `${url}/healthz`);
    }
  } finally {
    await c.close();
  }
});

test('a store that never answers is not ready once the timeout passes', async () => {
  let reads = 0;
  const server = await startMetricsServer({
    host: '127.0.0.1',
    port: 0,
    registry: new Registry(),
    store: {
      read: () => {
        reads++;
        return new Promise<never>(() => {});
      },
    },
    readyTimeoutMs: 50,
  });
  try {
    const a = await request(server.url, '/readyz', 'GET');
    assert.equal(a.status, 503);
    assert.match(a.raw.toString(), /not ready/);
    assert.equal(reads, 1);
    assert.equal((await request(server.url, '/healthz', 'GET')).status, 200);
    assert.equal((await request(server.url, '/elsewhere', 'GET')).status, 404);
  } finally {
    await server.close();
  }
});
