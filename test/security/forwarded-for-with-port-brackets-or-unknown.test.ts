// A trusted proxy's X-Forwarded-For entry that is not a bare address (issue 31 item 15): with a
// port (`1.2.3.4:5678`, `[::1]:80`), in brackets, `unknown`, empty or garbage. An address with a
// port or brackets is that address, one failure counter with its bare form; an entry that names
// no address is refused (400 BAD_REQUEST), never skipped so that the proxy itself or an entry
// further left becomes the client, a source with a fresh counter and another audit name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FAILURE_DELAY_BASE_MS } from '../../src/control/operators/failure-delay.js';
import { addOperator, adminCall } from '../helpers/admin-client.js';
import { dumpStore, startControlInProcess } from '../helpers/control-harness.js';

const WRONG = 'so_' + 'B'.repeat(32);

async function withProxy(fn: (url: string, waits: number[], right: string, audit: () => Array<{ action: string; source: string }>) => Promise<void>): Promise<void> {
  const waits: number[] = [];
  const c = await startControlInProcess({ admin: { trustedProxies: ['127.0.0.1'], sleep: async (ms) => void waits.push(ms) } });
  try {
    const right = await addOperator(c.store, 'vera', 'viewer');
    await fn(c.server.url, waits, right, () => dumpStore(c.store).audit as Array<{ action: string; source: string }>);
  } finally {
    await c.close();
  }
}

const failedSources = (audit: Array<{ action: string; source: string }>) => audit.filter((e) => e.action === 'auth.failed').map((e) => e.source);

test('an IPv4 client with a port in X-Forwarded-For is the address: every port counts against one source, each guess waiting longer', async () => {
  await withProxy(async (url, waits, right, audit) => {
    for (const xff of ['198.51.100.7:5678', '198.51.100.7:5679', '198.51.100.7', '10.0.0.1, 198.51.100.7:1']) {
      const r = await adminCall(url, '/v1/admin/nodes', { token: WRONG, headers: { 'x-forwarded-for': xff, 'x-forwarded-proto': 'https' } });
      assert.equal(r.status, 401, xff);
    }
    assert.deepEqual(failedSources(audit()), ['198.51.100.7', '198.51.100.7', '198.51.100.7', '198.51.100.7']);
    assert.deepEqual(waits, [FAILURE_DELAY_BASE_MS, 2 * FAILURE_DELAY_BASE_MS, 4 * FAILURE_DELAY_BASE_MS]);
    const ok = await adminCall(url, '/v1/admin/nodes', { token: right, headers: { 'x-forwarded-for': '198.51.100.7:5680', 'x-forwarded-proto': 'https' } });
    assert.equal(ok.status, 200);
  });
});

test('an IPv6 client in brackets, with or without a port, is the address and shares its /64 counter', async () => {
  await withProxy(async (url, waits, _right, audit) => {
    for (const xff of ['[2001:db8::5]:80', '[2001:db8::5]', '2001:db8::5', '[2001:db8::6]:443']) {
      const r = await adminCall(url, '/v1/admin/nodes', { token: WRONG, headers: { 'x-forwarded-for': xff, 'x-forwarded-proto': 'https' } });
      assert.equal(r.status, 401, xff);
    }
    assert.deepEqual(failedSources(audit()), ['2001:db8::5', '2001:db8::5', '2001:db8::5', '2001:db8::6']);
    assert.deepEqual(waits, [FAILURE_DELAY_BASE_MS, 2 * FAILURE_DELAY_BASE_MS, 4 * FAILURE_DELAY_BASE_MS]);
  });
});

test('a loopback client written as [::1]:80 is on loopback, not the proxy', async () => {
  await withProxy(async (url, _waits, right, audit) => {
    // Plain http from the proxy: a credential is taken only because the client it names is on loopback.
    const ok = await adminCall(url, '/v1/admin/nodes', { token: right, headers: { 'x-forwarded-for': '[::1]:80' } });
    assert.equal(ok.status, 200);
    await adminCall(url, '/v1/admin/nodes', { token: WRONG, headers: { 'x-forwarded-for': '[::1]:80' } });
    assert.deepEqual(failedSources(audit()), ['::1']);
  });
});

test('an entry that names no address is refused on the API and the dashboard login, counting nothing and auditing no new source', async () => {
  await withProxy(async (url, waits, right, audit) => {
    const hostile = ['unknown', '', ' ', '198.51.100.7, unknown', '198.51.100.7,', 'unknown, 198.51.100.7:5678, ', '1.2.3.4:99999', '[1.2.3.4]:80', '999.1.1.1:80', '[::1', '_hidden', '1.2.3.4:80:80', 'host.example:80'];
    for (const xff of hostile) {
      for (const token of [WRONG, right]) {
        const r = await adminCall(url, '/v1/admin/nodes', { token, headers: { 'x-forwarded-for': xff, 'x-forwarded-proto': 'https' } });
        assert.equal(r.status, 400, `${JSON.stringify(xff)}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, 'BAD_REQUEST');
        assert.match(r.body.error.message, /X-Forwarded-For/);
      }
      const login = await adminCall(url, '/ui/login', { json: { token: WRONG }, headers: { 'x-forwarded-for': xff, 'x-forwarded-proto': 'https' } });
      assert.equal(login.status, 400, `login ${JSON.stringify(xff)}`);
    }
    assert.deepEqual(failedSources(audit()), []);
    assert.deepEqual(waits, []);
  });
});

test('from an untrusted peer the same headers are ignored: the peer is the source', async () => {
  const waits: number[] = [];
  const c = await startControlInProcess({ admin: { trustedProxies: [], sleep: async (ms) => void waits.push(ms) } });
  try {
    for (const xff of ['unknown', '198.51.100.7:5678', '']) {
      const r = await adminCall(c.server.url, '/v1/admin/nodes', { token: WRONG, headers: { 'x-forwarded-for': xff } });
      assert.equal(r.status, 401);
    }
    assert.deepEqual(failedSources(dumpStore(c.store).audit as Array<{ action: string; source: string }>), ['127.0.0.1', '127.0.0.1', '127.0.0.1']);
  } finally {
    await c.close();
  }
});
