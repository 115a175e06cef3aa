// An app's metrics endpoint is hostile (docs/design.md §19): a 100 MB body, a body that never ends,
// a server that never answers, a redirect off loopback, a URL off loopback. Each scrape ends
// within its bounds with a reason code, follows nothing, and never throws.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { scrapeMetrics, SCRAPE_MAX_BYTES } from '../../src/agent/metrics/scrape-metrics.js';

async function serve(t: { after(fn: () => unknown): void }, handler: http.RequestListener): Promise<{ port: number; hits: () => number }> {
  let hits = 0;
  const server = http.createServer((q, s) => {
    hits++;
    handler(q, s);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return { port: (server.address() as AddressInfo).port, hits: () => hits };
}

const spec = (port: number, p = '/metrics') => ({ url: `http://127.0.0.1:${port}${p}`, requests: 'req_total', errors: 'req_total{code=~"5.."}' });

test('a 100 MB body is cut off at 4 MiB: METRICS_TOO_LARGE, without reading the rest', async (t) => {
  let sent = 0;
  const { port } = await serve(t, (_q, s) => {
    const chunk = Buffer.alloc(1024 * 1024, 'a');
    const push = () => {
      while (sent < 100 * 1024 * 1024) {
        sent += chunk.length;
        if (!s.write(chunk)) return void s.once('drain', push);
      }
      s.end();
    };
    s.on('error', () => {});
    push();
  });
  const r = await scrapeMetrics(spec(port));
  assert.equal(r.ok, false);
  assert.equal(!r.ok && r.code, 'METRICS_TOO_LARGE');
  assert.ok(sent < 100 * 1024 * 1024, `the server was not read to its end (${sent} bytes sent)`);
});

test('a Content-Length over 4 MiB is refused before any byte of the body', async (t) => {
  const { port } = await serve(t, (_q, s) => {
    s.writeHead(200, { 'Content-Length': String(SCRAPE_MAX_BYTES + 1) });
    s.write('req_total 1\n');
  });
  const r = await scrapeMetrics(spec(port));
  assert.equal(!r.ok && r.code, 'METRICS_TOO_LARGE');
});

test('a body that never ends, and a server that never answers, end at the time bound: METRICS_TIMEOUT', async (t) => {
  const trickle = await serve(t, (_q, s) => {
    s.writeHead(200);
    const timer = setInterval(() => s.write('req_total 1\n'), 20);
    s.on('close', () => clearInterval(timer));
  });
  const silent = await serve(t, () => {});
  for (const port of [trickle.port, silent.port]) {
    const started = Date.now();
    const r = await scrapeMetrics(spec(port), { timeoutMs: 300 });
    assert.equal(!r.ok && r.code, 'METRICS_TIMEOUT');
    assert.ok(Date.now() - started < 5000, 'it ended');
  }
});

test('a redirect is never followed, not even to loopback: METRICS_REDIRECT_REFUSED', async (t) => {
  const target = await serve(t, (_q, s) => s.end('req_total 1\n'));
  for (const location of ['http://169.254.169.254/latest/meta-data/', `http://127.0.0.1:${target.port}/metrics`]) {
    const { port } = await serve(t, (_q, s) => {
      s.writeHead(302, { Location: location });
      s.end();
    });
    const r = await scrapeMetrics(spec(port));
    assert.equal(!r.ok && r.code, 'METRICS_REDIRECT_REFUSED', location);
  }
  assert.equal(target.hits(), 0, 'the redirect target was never asked');
});

test('a URL off loopback is refused without a connection, whatever it looks like: METRICS_URL_REFUSED', async () => {
  for (const url of ['http://10.0.0.1:9100/metrics', 'http://127.0.0.2:9100/metrics', 'http://0.0.0.0:9100/metrics', 'http://localhost.example.com:9100/metrics', 'https://127.0.0.1:9100/metrics', 'http://user:pw@127.0.0.1:9100/metrics', 'http://127.0.0.1/metrics', 'http://[::ffff:127.0.0.1]:9100/metrics', 'file:///etc/passwd']) {
    const r = await scrapeMetrics({ url, requests: 'a', errors: 'b' });
    assert.equal(!r.ok && r.code, 'METRICS_URL_REFUSED', url);
  }
});

test('an endpoint that is down, or answers 500, has its code; localhost is 127.0.0.1 and [::1] is itself', async (t) => {
  const { port } = await serve(t, (_q, s) => {
    s.statusCode = 500;
    s.end();
  });
  assert.equal((await scrapeMetrics(spec(port)) as { code?: string }).code, 'METRICS_HTTP_STATUS');
  const ok = await serve(t, (q, s) => s.end(`# host ${q.headers.host}\nreq_total{code="200"} 7\nreq_total{code="503"} 2\n`));
  const viaName = await scrapeMetrics({ ...spec(ok.port), url: `http://localhost:${ok.port}/metrics` });
  assert.deepEqual(viaName, { ok: true, requests: 9, errors: 2 });
  const closed = await serve(t, () => {});
  t.after(() => {});
  const down = await scrapeMetrics({ ...spec(closed.port), url: `http://[::1]:${closed.port}/metrics` });
  // Nothing listens on [::1] at that port (the server is on 127.0.0.1): refused or unreachable, never a throw.
  assert.equal(!down.ok && down.code, 'METRICS_UNREACHABLE');
});
