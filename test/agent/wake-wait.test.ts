// The agent's wake-up decisions (src/agent/wake-wait.ts) on a clock that moves only when slept on
// and a scripted control plane: how long each wait is, when a wait is armed again, how a node
// woken again and again slows down, and that a failed or unknown wait never becomes a loop.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createWakeSleep, NO_ROUTE_RETRY_MS, type WakeDeps } from '../../src/agent/wake-wait.js';
import type { PostAnswer } from '../../src/agent/control-plane-client.js';
import { StewardError } from '../../src/core/errors.js';

// A control plane's answer to one wait: the answer, and how long it took (ms of the clock).
type Scripted = { answer?: PostAnswer; error?: Error; takesMs?: number } | ((timeoutS: number) => { answer?: PostAnswer; error?: Error; takesMs?: number });

function rig(script: Scripted[]) {
  let t = 0;
  const sleeps: number[] = [];
  const waits: Array<{ at: number; timeoutS: number }> = [];
  const logs: string[] = [];
  const deps: WakeDeps = {
    clock: {
      now: () => 1_800_000_000_000 + t,
      monotonic: () => t,
      sleep: async (ms) => {
        sleeps.push(ms);
        t += ms;
      },
    },
    random: () => 0.5,
    get: async (request) => {
      const r = request();
      const timeoutS = Number(/timeout=(\d+)/.exec(r.endpoint)?.[1]);
      assert.match(r.headers.Authorization ?? '', /^Steward-Node /);
      waits.push({ at: t, timeoutS });
      const next = script.shift() ?? { answer: { status: 200, json: { woken: false } }, takesMs: timeoutS * 1000 };
      const s = typeof next === 'function' ? next(timeoutS) : next;
      t += s.takesMs ?? 0;
      if (s.error) throw s.error;
      return s.answer as PostAnswer;
    },
    authorization: () => 'Steward-Node n-00 1 AAAA',
    log: (fmt, ...args) => logs.push([fmt, ...args].join(' ')),
  };
  return { wake: createWakeSleep(deps), sleeps, waits, logs, now: () => t };
}

const signal = new AbortController().signal;
const timedOut = (s: number) => ({ answer: { status: 200, json: { woken: false } }, takesMs: s * 1000 });
const woken = { answer: { status: 200, json: { woken: true } }, takesMs: 50 };

test('a 150 s interval is covered by waits of 60, 60 and 30 s, each armed again when it runs out; then the heartbeat', async () => {
  const r = rig([timedOut, timedOut, timedOut]);
  assert.equal(await r.wake.sleep(150_000, signal), 'slept');
  assert.deepEqual(r.waits.map((w) => w.timeoutS), [60, 60, 30]);
  assert.equal(r.now(), 150_000);
});

test('a 30 s interval: one wait of 30 s; under 2 s left, the rest is slept without a wait', async () => {
  const r = rig([(s) => ({ answer: { status: 200, json: { woken: false } }, takesMs: s * 1000 - 1_500 })]);
  assert.equal(await r.wake.sleep(30_000, signal), 'slept');
  assert.deepEqual(r.waits.map((w) => w.timeoutS), [30]);
  assert.deepEqual(r.sleeps, [1_500]);
});

test('woken again and again, the node waits longer before each next wait; a wait that runs out starts over', async () => {
  const r = rig([woken, woken, woken, woken, timedOut, woken, woken, woken]);
  for (let i = 0; i < 4; i++) assert.equal(await r.wake.sleep(30_000, signal), 'woken');
  // After the 1st wake the next wait goes at once; after the 2nd, 3rd: 0.5 s, 1 s.
  assert.deepEqual(r.sleeps, [500, 1_000]);
  // After the 4th: 2 s, then the wait runs out (the rest of the interval), which starts over.
  assert.equal(await r.wake.sleep(30_000, signal), 'slept');
  assert.equal(r.sleeps.at(-1), 2_000);
  r.sleeps.length = 0;
  for (let i = 0; i < 3; i++) assert.equal(await r.wake.sleep(30_000, signal), 'woken');
  assert.deepEqual(r.sleeps, [500]);
});

test('the pause after many wakes is never longer than the interval', async () => {
  const r = rig(Array.from({ length: 12 }, () => woken));
  for (let i = 0; i < 12; i++) await r.wake.sleep(10_000, signal);
  assert.ok(r.sleeps.every((s) => s <= 10_000), r.sleeps.join(','));
});

for (const [what, step] of [
  ['no control plane answers', { error: new StewardError('CONTROL_PLANE_UNREACHABLE', 'http://127.0.0.1:1/v1/wait: connect ECONNREFUSED'), takesMs: 5 }],
  ['a 503', { answer: { status: 503, json: { error: { code: 'BUSY', message: 'full' } } }, takesMs: 5 }],
  ['a 401', { answer: { status: 401, json: { error: { code: 'UNAUTHENTICATED', message: 'no' } } }, takesMs: 5 }],
  ['a 200 that is not an answer', { answer: { status: 200, json: { woken: 'yes' } }, takesMs: 5 }],
] as const) {
  test(`a wait that fails (${what}) is not tried again before the heartbeat: the rest of the interval is slept`, async () => {
    const r = rig([step]);
    assert.equal(await r.wake.sleep(30_000, signal), 'slept');
    assert.equal(r.waits.length, 1);
    assert.deepEqual(r.sleeps, [30_000 - 5]);
    // The next interval tries once more: one failed wait an interval at most.
    await r.wake.sleep(30_000, signal);
    assert.equal(r.waits.length, 2);
  });
}

test('404: a control plane without the route gets no wait for an hour, then is asked again', async () => {
  const r = rig([{ answer: { status: 404, json: { error: { code: 'NOT_FOUND', message: 'no such path' } } }, takesMs: 5 }]);
  assert.equal(await r.wake.sleep(30_000, signal), 'slept');
  for (let i = 0; i < NO_ROUTE_RETRY_MS / 30_000 - 1; i++) await r.wake.sleep(30_000, signal);
  assert.equal(r.waits.length, 1, 'one wait in the hour');
  assert.equal(r.logs.filter((l) => /has no/.test(l)).length, 1);
  await r.wake.sleep(30_000, signal);
  await r.wake.sleep(30_000, signal);
  assert.equal(r.waits.length, 2, 'asked again after the hour');
});
