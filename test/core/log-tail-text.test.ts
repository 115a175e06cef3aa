import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { encodedBytes, isLogTail, logTailOf, LOG_TAIL_MAX_BYTES } from '../../src/core/log-tail-text.js';
import { receiptPayloadSchema } from '../../src/core/receipt-schema.js';

test('any bytes or text make a log tail: valid UTF-8, no control character but tab and newline, at most 8 KiB encoded', () => {
  const raw = fc.oneof(fc.uint8Array({ maxLength: 20_000 }).map((b) => Buffer.from(b)), fc.string({ unit: 'binary', maxLength: 12_000 }), fc.string({ unit: fc.constantFrom('"', '\\', '\u0001', '\n', 'é', '\u{1f600}', '\ud800', 'a'), maxLength: 12_000 }));
  fc.assert(
    fc.property(raw, (r) => {
      const tail = logTailOf(r);
      assert.ok(encodedBytes(tail) <= LOG_TAIL_MAX_BYTES, `${encodedBytes(tail)} bytes`);
      assert.ok(isLogTail(tail));
      assert.doesNotMatch(tail, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
      assert.equal(Buffer.from(tail, 'utf8').toString('utf8'), tail, 'round-trips through UTF-8');
    }),
    { numRuns: 300 },
  );
});

test('a log tail keeps the end of the log, from a line start once it had to be cut', () => {
  const lines = Array.from({ length: 2000 }, (_, i) => `line ${i} ${'"'.repeat(i % 7)}`);
  const tail = logTailOf(lines.join('\n') + '\n');
  assert.ok(tail.endsWith('line 1998 """\nline 1999 """"\n'));
  assert.match(tail, /^line \d+ /, 'starts at a whole line');
  assert.ok(encodedBytes(tail) <= LOG_TAIL_MAX_BYTES);
  assert.ok(encodedBytes(tail) > LOG_TAIL_MAX_BYTES - 200, 'uses the room it has');
  assert.equal(logTailOf('short\n'), 'short\n');
});

test('invalid UTF-8, lone surrogates and terminal escapes become U+FFFD; tabs and newlines stay', () => {
  assert.equal(logTailOf(Buffer.from([0x61, 0xff, 0xfe, 0x62, 0x0a])), 'a\ufffd\ufffdb\n');
  assert.equal(logTailOf('x\u001b[31mred\u0007\tok\r\n\ud800'), 'x\ufffd[31mred\ufffd\tok\ufffd\n\ufffd');
});

const base = { nodeId: 'n-1', app: 'web', attemptId: 'a1', seq: 1, fromVersion: '1.0.0', targetVersion: '2.0.0', integrity: null, startedAt: 1, updatedAt: 2 };

test('the receipt schema takes logTail only in a v2 rolled-back or failed receipt, and only as a log tail', () => {
  const ok = (p: object) => receiptPayloadSchema.safeParse(p).success;
  assert.equal(ok({ ...base, v: 2, outcome: 'rolled-back', logTail: 'boom\n' }), true);
  assert.equal(ok({ ...base, v: 2, outcome: 'failed', logTail: '' }), true);
  assert.equal(ok({ ...base, v: 2, outcome: 'active' }), true, 'v2 without logTail');
  assert.equal(ok({ ...base, v: 1, outcome: 'rolled-back', logTail: 'boom\n' }), false, 'v1 never carries it');
  assert.equal(ok({ ...base, v: 2, outcome: 'active', logTail: 'boom\n' }), false, 'only failures carry it');
  assert.equal(ok({ ...base, v: 2, outcome: 'rolled-back', logTail: 'a\u001b[2J' }), false, 'control characters');
  assert.equal(ok({ ...base, v: 2, outcome: 'rolled-back', logTail: '\ud800' }), false, 'a lone surrogate');
  assert.equal(ok({ ...base, v: 2, outcome: 'rolled-back', logTail: '"'.repeat(4096) }), false, 'over 8 KiB once encoded');
  assert.equal(ok({ ...base, v: 3, outcome: 'rolled-back', logTail: 'boom\n' }), true, 'v3 carries it too');
  assert.equal(ok({ ...base, v: 4, outcome: 'active' }), false, 'a version this steward does not know');
});
