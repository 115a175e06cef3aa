import assert from 'node:assert/strict';
import { test } from 'node:test';
import { escapeControlChars, PLAIN_TEXT_RE } from '../../src/core/control-chars.js';

test('control characters are written as escapes and other text is left as it is', () => {
  const cases: Array<[string, string]> = [
    ['alice (uid 1001) over helper.sock', 'alice (uid 1001) over helper.sock'],
    ['a\nb\r\tc', 'a\\nb\\r\\tc'],
    ['\u001b[2J\u0000\u007f', '\\x1b[2J\\x00\\x7f'],
    ['\u0085\u009b', '\\x85\\x9b'],
    ['\u202eroot\u2066\u2028', '\\u202eroot\\u2066\\u2028'],
    ['zürich ✓ 日本', 'zürich ✓ 日本'],
  ];
  for (const [raw, want] of cases) assert.equal(escapeControlChars(raw), want, JSON.stringify(raw));
});

test('plain text is text without any character that escapeControlChars would escape', () => {
  for (let c = 0; c <= 0x206f; c++) {
    const ch = String.fromCharCode(c);
    assert.equal(PLAIN_TEXT_RE.test(`a${ch}b`), escapeControlChars(ch) === ch, `U+${c.toString(16)}`);
  }
});
