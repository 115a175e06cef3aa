import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StewardError } from '../../src/core/errors.js';
import { HOLD_FOR_MAX_MS, HOLD_REASON_MAX, holdReasonProblem, parseHoldDuration } from '../../src/core/hold-limits.js';

const M = 60_000;
const H = 60 * M;
const D = 24 * H;

test('a hold duration is minutes, hours, days or a sum of them', () => {
  for (const [text, ms] of [
    ['30m', 30 * M],
    ['1m', M],
    ['4h', 4 * H],
    ['2d', 2 * D],
    ['1d12h', D + 12 * H],
    ['1h30m', H + 30 * M],
    ['90m', 90 * M],
    ['365d', HOLD_FOR_MAX_MS],
  ] as const) {
    assert.equal(parseHoldDuration(text), ms, text);
  }
});

test('a malformed, too short or too long hold duration is refused USAGE, naming what was given', () => {
  for (const text of ['', '30', 'm', '30 m', ' 30m', '30m ', '-30m', '+30m', '1.5h', '30M', '4H', '1w', '30s', '500ms', '0m', '0d', '59s', '1h-', 'h1', '1e3m', '0x10m', '１m', '366d', '8761h', '525601m', '99999999d', '1d'.repeat(20), '30m\n', 'forever']) {
    assert.throws(
      () => parseHoldDuration(text),
      (err: unknown) => err instanceof StewardError && err.code === 'USAGE' && err.message.includes('--until'),
      JSON.stringify(text),
    );
  }
});

test('the longest hold duration is 365 days and the shortest a minute, and the refusal says which bound it broke', () => {
  assert.throws(() => parseHoldDuration('366d'), /longer than 365 days/);
  assert.throws(() => parseHoldDuration('0m'), /shorter than a minute/);
  assert.throws(() => parseHoldDuration('1x'), /not a duration like 30m/);
});

test('a hold reason must say something, fit on a line and carry no control character', () => {
  assert.equal(holdReasonProblem('change freeze until the audit'), null);
  assert.equal(holdReasonProblem('x'.repeat(HOLD_REASON_MAX)), null);
  assert.equal(holdReasonProblem('Wartung – bitte nicht ändern'), null, 'any printable text');
  assert.match(holdReasonProblem('') ?? '', /empty/);
  assert.match(holdReasonProblem('   \t') ?? '', /empty/);
  assert.match(holdReasonProblem('x'.repeat(HOLD_REASON_MAX + 1)) ?? '', /longer than 256/);
  for (const bad of ['two\nlines', 'a\rb', 'esc \x1b[31mred', 'nul\0', 'del\x7f', 'c1\x85', 'bidi \u202e', 'sep\u2028']) {
    assert.match(holdReasonProblem(bad) ?? '', /control character/, JSON.stringify(bad));
  }
});
