import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backoffDelayMs, FETCH_JITTER_MAX_MS, fetchJitterMs, heartbeatIntervalMs, HEARTBEAT_BACKOFF, RECEIPT_RETRY_BACKOFF } from '../../src/agent/backoff.js';

const fixed = (r: number) => () => r;

test('the heartbeat backoff doubles from 1 s and stops at 5 min (no jitter at the midpoint)', () => {
  const table: Array<[number, number]> = [
    [1, 1000],
    [2, 2000],
    [3, 4000],
    [5, 16_000],
    [9, 256_000],
    [10, 300_000],
    [11, 300_000],
    [60, 300_000],
    [10_000, 300_000],
  ];
  for (const [failures, want] of table) assert.equal(backoffDelayMs(failures, fixed(0.5)), want, `failures=${failures}`);
});

test('the backoff jitter stays within ±10 % and never passes the 5 min cap', () => {
  const table: Array<[number, number, number]> = [
    // failures, random, expected
    [1, 0, 900],
    [1, 0.999999, 1100],
    [4, 0, 7200],
    [4, 0.75, 8400],
    [10, 0, 270_000],
    [10, 0.999999, 300_000],
    [30, 0.25, 285_000],
  ];
  for (const [failures, r, want] of table) assert.equal(backoffDelayMs(failures, fixed(r)), want, `failures=${failures} r=${r}`);
  for (let f = 1; f <= 40; f++) {
    for (const r of [0, 0.1, 0.5, 0.9, 0.999999]) {
      const d = backoffDelayMs(f, fixed(r));
      const nominal = Math.min(HEARTBEAT_BACKOFF.capMs, 1000 * 2 ** (f - 1));
      assert.ok(d >= Math.floor(nominal * 0.9) && d <= Math.min(300_000, Math.ceil(nominal * 1.1)), `f=${f} r=${r} d=${d}`);
    }
  }
});

test('a zero or nonsense failure count and a broken random source still give a bounded delay', () => {
  assert.equal(backoffDelayMs(0, fixed(0.5)), 1000);
  assert.equal(backoffDelayMs(-3, fixed(0.5)), 1000);
  assert.equal(backoffDelayMs(1, fixed(Number.NaN)), 1000);
  assert.equal(backoffDelayMs(1, fixed(7)), 1100);
});

test('the receipt retry cadence doubles from 1 min to 1 h', () => {
  assert.equal(backoffDelayMs(1, fixed(0.5), RECEIPT_RETRY_BACKOFF), 60_000);
  assert.equal(backoffDelayMs(3, fixed(0.5), RECEIPT_RETRY_BACKOFF), 240_000);
  assert.equal(backoffDelayMs(20, fixed(0.5), RECEIPT_RETRY_BACKOFF), 3_600_000);
});

test('the heartbeat interval moves by at most ±10 % around heartbeatSeconds', () => {
  const table: Array<[number, number, number]> = [
    [30, 0, 27_000],
    [30, 0.5, 30_000],
    [30, 0.999999, 33_000],
    [1, 0.25, 950],
    [600, 0.75, 630_000],
  ];
  for (const [s, r, want] of table) assert.equal(heartbeatIntervalMs(s, fixed(r)), want, `s=${s} r=${r}`);
});

test('the fetch jitter is a random part of a quarter of the heartbeat interval, at most 10 s', () => {
  const fixed = (r: number) => () => r;
  const table: Array<[number, number, number]> = [[30, 0, 0], [30, 1, 7500], [30, 0.5, 3750], [1, 1, 250], [300, 1, FETCH_JITTER_MAX_MS], [30, NaN, 3750], [30, 7, 7500]];
  for (const [s, r, want] of table) assert.equal(fetchJitterMs(s, fixed(r)), want, `s=${s} r=${r}`);
});
