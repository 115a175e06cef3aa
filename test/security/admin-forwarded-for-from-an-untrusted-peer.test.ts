// A client guessing operator tokens cannot dodge the failure slowdown (docs/design.md §12) by sending a
// new X-Forwarded-For with every guess: the header is believed only from a --trusted-proxy, so
// an untrusted peer's failures all count against its own address and each waits longer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FAILURE_DELAY_BASE_MS } from '../../src/control/operators/failure-delay.js';
import { addOperator, adminCall } from '../helpers/admin-client.js';
import { dumpStore, startControlInProcess } from '../helpers/control-harness.js';

const WRONG = 'so_' + 'B'.repeat(32);

// Four wrong guesses, each claiming another forwarded address (and TLS before the proxy), then
// the right token.
async function guess(trustedProxies: string[]) {
  const waits: number[] = [];
  const c = await startControlInProcess({ admin: { trustedProxies, sleep: async (ms) => void waits.push(ms) } });
  try {
    const right = await addOperator(c.store, 'vera', 'viewer');
    for (let i = 1; i <= 4; i++) {
      const r = await adminCall(c.server.url, '/v1/admin/nodes', { token: WRONG, headers: { 'x-forwarded-for': `203.0.113.${i}`, 'x-forwarded-proto': 'https' } });
      assert.equal(r.status, 401);
    }
    const ok = await adminCall(c.server.url, '/v1/admin/nodes', { token: right, headers: { 'x-forwarded-for': '203.0.113.9', 'x-forwarded-proto': 'https' } });
    const audit = dumpStore(c.store).audit as Array<{ action: string; source: string }>;
    const sources = audit.filter((e) => e.action === 'auth.failed').map((e) => e.source);
    return { waits, sources, rightStatus: ok.status };
  } finally {
    await c.close();
  }
}

test('wrong tokens from an untrusted peer count against the peer whatever X-Forwarded-For says, each waiting longer', async () => {
  const r = await guess([]);
  assert.deepEqual(r.sources, ['127.0.0.1', '127.0.0.1', '127.0.0.1', '127.0.0.1']);
  assert.deepEqual(r.waits, [FAILURE_DELAY_BASE_MS, 2 * FAILURE_DELAY_BASE_MS, 4 * FAILURE_DELAY_BASE_MS]);
  assert.equal(r.rightStatus, 200, 'slowed, never locked out: the right token is still taken');
});

test('from a trusted proxy the forwarded address is the source, so different clients do not slow each other', async () => {
  const r = await guess(['127.0.0.1']);
  assert.deepEqual(r.sources, ['203.0.113.1', '203.0.113.2', '203.0.113.3', '203.0.113.4']);
  assert.deepEqual(r.waits, []);
});

test('through a trusted proxy only the address the proxy appended counts, not the ones the client wrote before it', async () => {
  const waits: number[] = [];
  const c = await startControlInProcess({ admin: { trustedProxies: ['127.0.0.1'], sleep: async (ms) => void waits.push(ms) } });
  try {
    for (let i = 1; i <= 3; i++) await adminCall(c.server.url, '/v1/admin/nodes', { token: WRONG, headers: { 'x-forwarded-for': `10.9.9.${i}, 198.51.100.20`, 'x-forwarded-proto': 'https' } });
    const sources = (dumpStore(c.store).audit as Array<{ source: string }>).map((e) => e.source);
    assert.deepEqual(sources, ['198.51.100.20', '198.51.100.20', '198.51.100.20']);
    assert.deepEqual(waits, [FAILURE_DELAY_BASE_MS, 2 * FAILURE_DELAY_BASE_MS]);
  } finally {
    await c.close();
  }
});
