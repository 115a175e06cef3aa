import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nextQuarantine, quarantineInForce } from '../../src/core/quarantine.js';
import { emptyAppState } from '../../src/core/state-schemas.js';

const policy = { baseMs: 300_000, capMs: 86_400_000 };

test('a blamed version waits 5 min, 10 min, 20 min ... capped at 24 h', () => {
  let state = emptyAppState();
  const waits: number[] = [];
  for (let i = 0; i < 12; i++) {
    const q = nextQuarantine(state, '2.0.0', policy, 1000, true);
    waits.push(q.retryAfter - 1000);
    assert.equal(q.failures, i + 1);
    state = { ...state, quarantine: { '2.0.0': q } };
  }
  assert.deepEqual(waits.slice(0, 5), [300_000, 600_000, 1_200_000, 2_400_000, 4_800_000]);
  assert.equal(waits[11], 86_400_000);
});

test('a suspect environment sets a retryAfter without raising the failure count', () => {
  const state = { ...emptyAppState(), quarantine: { '2.0.0': { failures: 2, retryAfter: 0 } } };
  const q = nextQuarantine(state, '2.0.0', policy, 0, false);
  assert.deepEqual(q, { failures: 2, retryAfter: 1_200_000 });
});

test('a quarantine holds a version back only while its retryAfter is ahead and within the cap', () => {
  const now = 1_800_000_000_000;
  const cap = 86_400_000;
  assert.equal(quarantineInForce(undefined, now, cap), false);
  assert.equal(quarantineInForce({ retryAfter: now + 1 }, now, cap), true);
  assert.equal(quarantineInForce({ retryAfter: now + cap }, now, cap), true, 'exactly the cap is a steady clock');
  assert.equal(quarantineInForce({ retryAfter: now + cap + 1 }, now, cap), false, 'past the cap: stamped before the clock went back');
  assert.equal(quarantineInForce({ retryAfter: now }, now, cap), false, 'over');
  assert.equal(quarantineInForce({ retryAfter: now + 10 * cap }, now, Infinity), true, 'no cap given: every future stamp holds');
});
