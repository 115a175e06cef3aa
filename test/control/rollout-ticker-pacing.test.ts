// docs/design.md §13: a rollout tick plans each run whole, so its cost grows with the fleet. Wakes (a
// commit that stored verdicts) and the timer wait, after a tick of d ms, until PACE × d ms have
// passed since it ended, at most MAX_GAP_MS; a burst of wakes costs one more tick. The ticker
// runs against a store that only lists runs (none), each listing taking the time the test
// gives it on a clock the test moves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as flush } from 'node:timers/promises';
import { MAX_GAP_MS, PACE, startRolloutTicker, type RolloutTicker } from '../../src/control/rollouts/rollout-ticker.js';
import type { ControlStore } from '../../src/control/store/store.js';

// A monotonic clock the test moves; sleeps resolve when it passes their end.
function testClock() {
  let t = 0;
  const sleepers: Array<{ at: number; resolve: () => void }> = [];
  return {
    monotonic: () => t,
    sleep: (ms: number, signal?: AbortSignal) =>
      new Promise<void>((resolve, reject) => {
        if (signal?.aborted) return reject(signal.reason);
        sleepers.push({ at: t + ms, resolve });
        signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
      }),
    // Time that passes inside a tick: no sleep is woken until the test advances.
    pass(ms: number) {
      t += ms;
    },
    async advance(ms: number) {
      t += ms;
      for (const s of sleepers.filter((x) => x.at <= t)) {
        sleepers.splice(sleepers.indexOf(s), 1);
        s.resolve();
      }
      for (let i = 0; i < 20; i++) await flush();
    },
  };
}

// A ticker whose every tick takes `tickMs()` on the test clock; `ticks` counts them, `wakeAll`
// is what a commit that stored verdicts calls.
function pacedTicker(tickMs: () => number, opts: { timerMs?: number; hold?: () => Promise<void> } = {}) {
  const clock = testClock();
  const state = { ticks: 0, wakeAll: () => {} };
  const store = {
    read: async (fn: (tx: unknown) => Promise<unknown>) =>
      fn({
        runs: {
          activeAll: async () => {
            state.ticks++;
            await opts.hold?.();
            clock.pass(tickMs());
            return [];
          },
        },
      }),
    onRolloutWake: (listener: () => void) => {
      state.wakeAll = listener;
      return () => (state.wakeAll = () => {});
    },
  } as unknown as ControlStore;
  const ticker: RolloutTicker = startRolloutTicker({ store, clock, tickMs: opts.timerMs ?? 0 });
  return { clock, state, ticker };
}

test('a wake after a 100 ms tick waits PACE × 100 ms from its end, then ticks', async (t) => {
  const { clock, state, ticker } = pacedTicker(() => 100);
  t.after(() => ticker.close());
  await ticker.tick();
  assert.equal(state.ticks, 1);
  state.wakeAll();
  await clock.advance(PACE * 100 - 1);
  assert.equal(state.ticks, 1, 'not before the pause is over');
  await clock.advance(1);
  assert.equal(state.ticks, 2);
  // Long after a tick, a wake ticks at once.
  await clock.advance(10 * PACE * 100);
  state.wakeAll();
  await clock.advance(0);
  assert.equal(state.ticks, 3);
});

test('a thousand wakes during a tick cost one more tick, after the pause', async (t) => {
  let release!: () => void;
  let holding = true;
  const { clock, state, ticker } = pacedTicker(() => 50, { hold: () => (holding ? new Promise<void>((r) => (release = r)) : Promise.resolve()) });
  t.after(() => ticker.close());
  // Not awaited: the tick() in progress ends only after the one more it was woken for.
  void ticker.tick();
  await clock.advance(0);
  for (let i = 0; i < 1000; i++) state.wakeAll();
  holding = false;
  release();
  await clock.advance(0);
  assert.equal(state.ticks, 1, 'the tick woken during the first waits its pause');
  await clock.advance(PACE * 50);
  assert.equal(state.ticks, 2);
  await clock.advance(100 * PACE * 50);
  assert.equal(state.ticks, 2, 'one more, not one a wake');
});

test('the pause after a very long tick is at most MAX_GAP_MS', async (t) => {
  const { clock, state, ticker } = pacedTicker(() => 60_000);
  t.after(() => ticker.close());
  await ticker.tick();
  state.wakeAll();
  await clock.advance(MAX_GAP_MS - 1);
  assert.equal(state.ticks, 1);
  await clock.advance(1);
  assert.equal(state.ticks, 2);
});

test('the timer waits out the pause too, and an explicit tick() does not', async (t) => {
  let cost = 400;
  const { clock, state, ticker } = pacedTicker(() => cost, { timerMs: 1000 });
  t.after(() => ticker.close());
  // The timer's first round, at 1000, ticks for 400 ms; its next round, 1000 ms after that
  // tick, at 2400, falls in the pause that lasts until 1400 + PACE × 400 = 2600.
  await clock.advance(1000);
  assert.equal(state.ticks, 1);
  cost = 1;
  await clock.advance(1000);
  assert.equal(state.ticks, 1);
  await clock.advance(199);
  assert.equal(state.ticks, 1, 'the timer round at 2400 waits');
  await clock.advance(1);
  assert.equal(state.ticks, 2);
  await ticker.tick();
  assert.equal(state.ticks, 3, 'tick() runs at once');
});

test('after close no wake and no timer ticks', async () => {
  const { clock, state, ticker } = pacedTicker(() => 10, { timerMs: 100 });
  await ticker.tick();
  state.wakeAll();
  ticker.close();
  await clock.advance(10_000);
  state.wakeAll();
  ticker.wake();
  await clock.advance(10_000);
  assert.equal(state.ticks, 1);
});
