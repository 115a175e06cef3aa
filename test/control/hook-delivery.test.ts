// The hooks' deliverer against real receivers (docs/design.md §19), on both stores: one that is
// down, one that answers 500 (with a hostile body), one that is slow, one that redirects; each
// event arrives at least once, signed, with its id, the same body on every attempt; failures are
// tried again with doubling, jittered delays; a slow receiver holds back no other hook; a
// delivery failing past the maximum age is given up with an audit entry.
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/control/store/open-store.js';
import { startHookDeliverer, type HookDeliverer } from '../../src/control/hooks/deliver-hooks.js';
import { emitEvent } from '../../src/control/hooks/emit-event.js';
import { verifySignature } from '../../src/control/hooks/sign-event.js';
import type { ControlStore, DeliveryRow } from '../../src/control/store/store.js';
import { FakeClock } from '../helpers/control-harness.js';
import { startHookReceiver, type HookReceiver } from '../helpers/hook-receiver.js';
import { describeEachBackend } from '../helpers/store-backends.js';

const SECRET = 'a-receiver-secret-of-32-characters';

describeEachBackend((backend) => {
  let store: ControlStore;
  let clock: FakeClock;
  let d: HookDeliverer;
  const receivers: HookReceiver[] = [];
  const receiver = async (...a: Parameters<typeof startHookReceiver>) => {
    const r = await startHookReceiver(...a);
    receivers.push(r);
    return r;
  };
  const addHook = (name: string, url: string) => store.write((tx) => tx.hooks.insert({ name, url, events: ['run.halted'], secret: SECRET, createdAt: 0, createdBy: null }));
  const emit = (n = 1) => store.write(async (tx) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push((await emitEvent(tx, 'run.halted', `run/${i + 1}`, { n: i }))!);
    return ids;
  });
  const rows = async (hook: string): Promise<DeliveryRow[]> => (await store.read((tx) => tx.hooks.deliveries(hook, 100))).reverse();
  // One round: the deliverer takes what is due, and every post it started ends.
  const round = async () => {
    await d.tick();
    await d.idle();
  };
  // Every request `r` got is a valid signature of its body, with the body's id as idempotency key.
  const assertSigned = (r: HookReceiver) => {
    for (const q of r.received) {
      assert.ok(verifySignature(SECRET, q.body, String(q.headers['steward-signature']), clock.now()), `a valid signature: ${q.headers['steward-signature']}`);
      assert.equal(q.headers['idempotency-key'], JSON.parse(q.body).id);
      assert.equal(q.headers['content-type'], 'application/cloudevents+json; charset=utf-8');
    }
  };

  beforeEach(async () => {
    clock = new FakeClock();
    store = await backend.open({ clock });
    d = startHookDeliverer({ store, clock, pollMs: 0, timeoutMs: 500, random: () => 0.5, owner: 'test' });
  });
  afterEach(async () => {
    await d.close();
    for (const r of receivers.splice(0)) await r.close();
    await store.close();
  });

  test('a receiver that is down is tried again with doubling delays, then gets the event with the same id and body once it is up', async () => {
    const r = await receiver();
    const port = r.port;
    await r.close();
    await addHook('down', r.url);
    const [id] = await emit();
    await round();
    let [row] = await rows('down');
    assert.deepEqual([row?.state, row?.attempts], ['pending', 1]);
    assert.match(row!.lastError!, /^HOOK_DELIVERY_FAILED: cannot post: .*ECONNREFUSED/);
    // random 0.5: three quarters of 2 s, then of 4 s.
    assert.equal(row!.nextAt - clock.now(), 1500);
    await round();
    assert.equal((await rows('down'))[0]!.attempts, 1, 'not due yet: not tried');
    clock.advance(1500);
    await round();
    [row] = await rows('down');
    assert.deepEqual([row?.attempts, row!.nextAt - clock.now()], [2, 3000]);
    const up = await receiver({ port });
    clock.advance(3000);
    await round();
    assert.deepEqual((await rows('down')).map((x) => [x.state, x.attempts]), [['delivered', 3]]);
    assert.equal(up.received.length, 1);
    assert.equal(JSON.parse(up.received[0]!.body).id, id);
    assert.equal(up.received[0]!.body, row!.body, 'the body as queued, byte for byte');
    assertSigned(up);
  });

  test('a receiver answering 500 with a huge, hostile body is tried again with the same event; what it said is kept short and printable', async () => {
    const r = await receiver({ mode: { kind: 'status', status: 500, body: '\u001b[31mboom\n' + 'x'.repeat(200_000) } });
    await addHook('err', r.url);
    const [id] = await emit();
    await round();
    const [row] = await rows('err');
    assert.equal(row?.attempts, 1);
    assert.match(row!.lastError!, /^HOOK_DELIVERY_FAILED: answered 500: \[31mboom x+\.\.\.$/);
    assert.ok(row!.lastError!.length < 300, `${row!.lastError!.length} characters`);
    r.mode = { kind: 'ok' };
    clock.advance(2000);
    await round();
    assert.equal((await rows('err'))[0]?.state, 'delivered');
    assert.deepEqual(r.received.map((q) => JSON.parse(q.body).id), [id, id], 'the same id on every attempt');
    assert.equal(r.received[0]!.body, r.received[1]!.body);
    assertSigned(r);
  });

  test('a redirect is a failed attempt that says where it pointed, and is never followed', async () => {
    const elsewhere = await receiver();
    const r = await receiver({ mode: { kind: 'redirect', status: 307, location: elsewhere.url } });
    await addHook('redir', r.url);
    await emit();
    await round();
    const [row] = await rows('redir');
    assert.deepEqual([row?.state, row?.attempts], ['pending', 1]);
    assert.match(row!.lastError!, /answered 307, a redirect to http:\/\/127\.0\.0\.1:\d+\/hook: redirects are never followed/);
    assert.equal(elsewhere.received.length, 0, 'nothing was posted where it pointed');
  });

  test('a slow receiver holds its own deliveries (four at most) and holds back neither the ticks nor any other hook', async () => {
    await d.close();
    d = startHookDeliverer({ store, clock, pollMs: 0, timeoutMs: 30_000, random: () => 0.5, owner: 'test' });
    const slow = await receiver({ mode: { kind: 'hang' } });
    const fast = await receiver();
    await addHook('slow', slow.url);
    await addHook('fast', fast.url);
    await emit(6);
    // Ticks go on while the slow hook's posts hang: the fast one takes four, then the other two.
    const fastDone = async () => (await rows('fast')).every((x) => x.state === 'delivered');
    for (let i = 0; i < 300 && !(await fastDone()); i++) {
      await d.tick();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(fast.received.length, 6);
    assert.deepEqual((await rows('fast')).map((x) => x.state), Array(6).fill('delivered'));
    assertSigned(fast);
    await slow.waitFor(4);
    const s = await rows('slow');
    assert.deepEqual(s.map((x) => [x.state, x.attempts]), Array(6).fill(['pending', 0]), 'still in flight, none answered');
    assert.equal(s.filter((x) => x.leaseOwner === 'test').length, 4, 'four of the slow hook in flight at once, the rest wait');
    assert.equal(slow.received.length, 4);
    // The slow receiver goes away mid-answer: each of its posts is a failed attempt.
    await slow.close();
    await d.idle();
    const after = await rows('slow');
    assert.equal(after.filter((x) => x.attempts === 1).length, 4);
    assert.match(after.find((x) => x.attempts === 1)!.lastError!, /^HOOK_DELIVERY_FAILED: cannot post: socket hang up/);
  });

  test('a receiver that never answers costs one deadline per attempt', async () => {
    const slow = await receiver({ mode: { kind: 'hang' } });
    await addHook('slow', slow.url);
    await emit();
    await round();
    const [row] = await rows('slow');
    assert.deepEqual([row?.state, row?.attempts], ['pending', 1]);
    assert.match(row!.lastError!, /^HOOK_DELIVERY_FAILED: no answer within 500 ms$/);
  });

  test('a delivery still failing past its maximum age is given up with an audit entry, never silently', async () => {
    await d.close();
    d = startHookDeliverer({ store, clock, pollMs: 0, timeoutMs: 500, random: () => 0, owner: 'test', maxAgeMs: 60_000 });
    const r = await receiver({ mode: { kind: 'status', status: 503 } });
    await addHook('gone', r.url);
    const [id] = await emit();
    for (let i = 0; i < 30 && (await rows('gone'))[0]!.state === 'pending'; i++) {
      await round();
      clock.advance(10_000);
    }
    const [row] = await rows('gone');
    assert.equal(row?.state, 'gave-up');
    assert.ok(row!.attempts >= 4);
    const audit = (await store.read((tx) => tx.audit.page(0, 0, 100))).filter((e) => e.action === 'hook.gave-up');
    assert.equal(audit.length, 1);
    assert.deepEqual([audit[0]!.operator, audit[0]!.target, audit[0]!.details.eventId, audit[0]!.details.attempts], ['system:steward-control', 'gone', id, row!.attempts]);
    assert.match(String(audit[0]!.details.lastError), /answered 503/);
    const before = r.received.length;
    clock.advance(3_600_000);
    await round();
    assert.equal(r.received.length, before, 'given up: not posted again');
  });
});
