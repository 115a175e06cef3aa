// Twelve wrong operator tokens from one address, then the right one from the same address
// (issue 31 item 12: it waited past 60 s, queued behind every failure's delay). Only failures
// wait now: the right token is answered at once, on the admin API and at the dashboard login,
// while the wrong ones still wait longer each, up to 10 s; a source with too many failures still
// waiting gets 429 unchecked, so guessing in parallel stays bounded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { FAILURE_DELAY_BASE_MS, FAILURE_DELAY_CAP_MS, MAX_PENDING_FAILURES } from '../../src/control/operators/failure-delay.js';
import { addOperator, adminCall, type AdminAnswer } from '../helpers/admin-client.js';
import { dumpStore, startControlInProcess } from '../helpers/control-harness.js';

const wrong = (i: number) => 'so_' + String(i).padStart(32, 'B');

// A sleep that ends only when the test opens the gate: the failures' answers wait as long as the
// test wants, so "at once" does not depend on the machine's speed.
function gatedSleep() {
  const waits: number[] = [];
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  return { waits, open: () => open(), sleep: async (ms: number) => void (waits.push(ms), await gate) };
}

async function within<T>(ms: number, p: Promise<T>, what: string): Promise<T> {
  return Promise.race([p, delay(ms).then(() => assert.fail(`${what} was not answered within ${ms} ms`))]);
}

function failedCount(store: Parameters<typeof dumpStore>[0]): number {
  return (dumpStore(store).audit as Array<{ action: string }>).filter((e) => e.action === 'auth.failed').length;
}

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await delay(10);
  assert.ok(cond(), what);
}

test('the right token is answered at once while twelve wrong ones from the same address still wait', async () => {
  const g = gatedSleep();
  const c = await startControlInProcess({ admin: { sleep: g.sleep } });
  try {
    const right = await addOperator(c.store, 'vera', 'viewer');
    const guesses: Array<Promise<AdminAnswer>> = [];
    for (let i = 1; i <= 12; i++) guesses.push(adminCall(c.server.url, '/v1/admin/nodes', { token: wrong(i) }));
    await until(() => g.waits.length === 11, 'eleven failures wait for their answer (the first is answered at once)');
    const api = await within(3000, adminCall(c.server.url, '/v1/admin/nodes', { token: right }), 'the right bearer token');
    assert.equal(api.status, 200);
    const login = await within(3000, adminCall(c.server.url, '/ui/login', { json: { token: right } }), 'a login with the right token');
    assert.equal(login.status, 200);
    assert.match(String(login.headers['set-cookie']), /steward_session=/);
    // The wrong ones are still waiting: slowed, each longer than the one before, up to the cap.
    assert.deepEqual(
      [...g.waits].sort((a, b) => a - b),
      [1, 2, 4, 8, 16, 32, 40, 40, 40, 40, 40].map((k) => Math.min(FAILURE_DELAY_CAP_MS, k * FAILURE_DELAY_BASE_MS)),
    );
    g.open();
    for (const r of await Promise.all(guesses)) assert.equal(r.status, 401);
    assert.equal(failedCount(c.store), 12);
  } finally {
    g.open();
    await c.close();
  }
});

test('a right token after many wrong ones sent one after the other is taken at once, and the next wrong one still waits the cap', async () => {
  const waits: number[] = [];
  const c = await startControlInProcess({ admin: { sleep: async (ms) => void waits.push(ms) } });
  try {
    const right = await addOperator(c.store, 'vera', 'viewer');
    for (let i = 1; i <= 20; i++) assert.equal((await adminCall(c.server.url, '/v1/admin/nodes', { token: wrong(i) })).status, 401);
    const before = waits.length;
    assert.equal((await adminCall(c.server.url, '/v1/admin/nodes', { token: right })).status, 200);
    assert.equal(waits.length, before, 'a right token waits for nothing');
    assert.equal((await adminCall(c.server.url, '/v1/admin/nodes', { token: wrong(21) })).status, 401);
    assert.equal(waits.at(-1), FAILURE_DELAY_CAP_MS, 'a success does not reset the count');
    assert.ok(Math.max(...waits) <= FAILURE_DELAY_CAP_MS);
  } finally {
    await c.close();
  }
});

test('a source with too many failures still waiting gets 429 unchecked and unaudited, and is taken again once they are answered', async () => {
  const g = gatedSleep();
  const c = await startControlInProcess({ admin: { sleep: g.sleep } });
  try {
    const right = await addOperator(c.store, 'vera', 'viewer');
    // The first failure is answered at once (sent alone: in a burst it would still hold its
    // place when the last of the burst arrives on a slow machine); the next MAX_PENDING_FAILURES wait.
    assert.equal((await adminCall(c.server.url, '/v1/admin/nodes', { token: wrong(0) })).status, 401);
    const guesses: Array<Promise<AdminAnswer>> = [];
    for (let i = 1; i <= MAX_PENDING_FAILURES; i++) guesses.push(adminCall(c.server.url, '/v1/admin/nodes', { token: wrong(i) }));
    await until(() => g.waits.length === MAX_PENDING_FAILURES, 'the failures wait for their answer');
    for (const token of [wrong(999), right]) {
      const r = await within(3000, adminCall(c.server.url, '/v1/admin/nodes', { token }), 'a credential past the budget');
      assert.equal(r.status, 429);
      assert.equal(r.body.error.code, 'BUSY');
      assert.equal(r.headers['retry-after'], String(FAILURE_DELAY_CAP_MS / 1000));
    }
    const login = await adminCall(c.server.url, '/ui/login', { json: { token: wrong(1000) } });
    assert.equal(login.status, 429);
    assert.equal(failedCount(c.store), MAX_PENDING_FAILURES + 1, 'refused unchecked: no failure counted or audited');
    g.open();
    for (const r of await Promise.all(guesses)) assert.equal(r.status, 401);
    assert.equal((await adminCall(c.server.url, '/v1/admin/nodes', { token: right })).status, 200);
  } finally {
    g.open();
    await c.close();
  }
});

test('another address is not held up by one that is guessing', async () => {
  const g = gatedSleep();
  const c = await startControlInProcess({ admin: { trustedProxies: ['127.0.0.1'], sleep: g.sleep } });
  try {
    const right = await addOperator(c.store, 'vera', 'viewer');
    const headers = (xff: string) => ({ 'x-forwarded-for': xff, 'x-forwarded-proto': 'https' });
    assert.equal((await adminCall(c.server.url, '/v1/admin/nodes', { token: wrong(0), headers: headers('198.51.100.7') })).status, 401);
    const guesses: Array<Promise<AdminAnswer>> = [];
    for (let i = 1; i <= MAX_PENDING_FAILURES + 5; i++) guesses.push(adminCall(c.server.url, '/v1/admin/nodes', { token: wrong(i), headers: headers('198.51.100.7') }));
    await until(() => g.waits.length === MAX_PENDING_FAILURES, 'the failures wait for their answer');
    const other = await within(3000, adminCall(c.server.url, '/v1/admin/nodes', { token: right, headers: headers('198.51.100.8') }), 'another address');
    assert.equal(other.status, 200);
    g.open();
    await Promise.all(guesses);
  } finally {
    g.open();
    await c.close();
  }
});
