import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { probeControlPlaneClock } from '../../src/cli/doctor/control-plane-clock.js';

async function serve(handler: http.RequestListener): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/base/`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

test('the clock probe GETs /v1/heartbeat under the base path and measures the Date header against the middle of the request', async () => {
  let seen = '';
  const cp = await serve((req, res) => {
    seen = `${req.method} ${req.url}`;
    res.setHeader('Date', new Date(Date.parse('2030-01-01T00:03:00Z')).toUTCString());
    res.writeHead(405).end();
  });
  try {
    let t = Date.parse('2030-01-01T00:00:00Z');
    const r = await probeControlPlaneClock({ url: cp.url }, { timeoutMs: 2000, now: () => (t += 1000) });
    assert.equal(seen, 'GET /base/v1/heartbeat');
    // Sent at +1 s, answered at +2 s: the middle is +1.5 s; the server says +180 s.
    assert.deepEqual(r, { state: 'measured', url: cp.url, skewMs: 178_500, status: 405 });
  } finally {
    await cp.close();
  }
});

test('an answer without a Date header, a silent server and a refused URL are unreachable with the reason', async () => {
  const noDate = await serve((_req, res) => {
    res.sendDate = false;
    res.writeHead(405).end();
  });
  const silent = await serve(() => {});
  try {
    const a = await probeControlPlaneClock({ url: noDate.url }, { timeoutMs: 2000 });
    assert.equal(a.state, 'unreachable');
    assert.match((a as { why: string }).why, /HTTP 405 without a valid Date header/);
    const b = await probeControlPlaneClock({ url: silent.url }, { timeoutMs: 200 });
    assert.match((b as { why: string }).why, /no answer within 200 ms/);
    const c = await probeControlPlaneClock({ url: 'http://cp.example:8443' }, { timeoutMs: 200 });
    assert.match((c as { why: string }).why, /plain http to the control plane is allowed only to a loopback host/);
  } finally {
    await noDate.close();
    silent.close().catch(() => {});
  }
});
