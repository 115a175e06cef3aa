import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyHeartbeatAnswer } from '../../src/agent/heartbeat-answer.js';
import { MAX_ADOPTED_SEQ, MAX_DATE_MS } from '../../src/core/heartbeat-limits.js';

const err = (code: string, extra: Record<string, unknown> = {}) => ({ error: { code, message: `m-${code}` }, ...extra });

test('each answer of the heartbeat contract maps to what the agent does with it', () => {
  const table: Array<[number, unknown, string]> = [
    [200, { ackedSeqs: [1, 2], desired: [], heartbeatSeconds: 30 }, 'ok'],
    [200, { ackedSeqs: [1], desired: [] }, 'unavailable'],
    [200, 'not json at all', 'unavailable'],
    [200, undefined, 'unavailable'],
    [409, err('SEQ_REPLAYED', { lastSeq: 9 }), 'replayed'],
    [409, err('SEQ_REPLAYED'), 'refused'],
    [422, err('CLOCK_SKEW', { serverTime: 5 }), 'clock-skew'],
    [401, err('UNKNOWN_NODE'), 'unauthorized'],
    [401, err('BAD_SIGNATURE'), 'unauthorized'],
    [401, undefined, 'unauthorized'],
    [400, err('RECEIPT_REJECTED'), 'receipt-rejected'],
    [400, err('BAD_BODY'), 'refused'],
    [404, undefined, 'refused'],
    [500, err('INTERNAL'), 'unavailable'],
    [503, undefined, 'unavailable'],
    [302, undefined, 'unavailable'],
  ];
  for (const [status, json, kind] of table) assert.equal(classifyHeartbeatAnswer(status, json).kind, kind, `${status} ${JSON.stringify(json)}`);
});

test('a 409 carries the lastSeq and a 422 the server time', () => {
  assert.deepEqual(classifyHeartbeatAnswer(409, err('SEQ_REPLAYED', { lastSeq: 41 })), { kind: 'replayed', lastSeq: 41, message: 'm-SEQ_REPLAYED' });
  assert.deepEqual(classifyHeartbeatAnswer(422, err('CLOCK_SKEW', { serverTime: 1234 })), { kind: 'clock-skew', serverTime: 1234, message: 'm-CLOCK_SKEW' });
});

test('a 409 lastSeq above MAX_ADOPTED_SEQ is refused, not adopted, and a serverTime that is no Date is unknown', () => {
  assert.equal(classifyHeartbeatAnswer(409, err('SEQ_REPLAYED', { lastSeq: MAX_ADOPTED_SEQ })).kind, 'replayed');
  const high = classifyHeartbeatAnswer(409, err('SEQ_REPLAYED', { lastSeq: MAX_ADOPTED_SEQ + 1 }));
  assert.equal(high.kind, 'refused');
  assert.match((high as { message: string }).message, /not adopted/);
  assert.equal(classifyHeartbeatAnswer(409, err('SEQ_REPLAYED', { lastSeq: Number.MAX_SAFE_INTEGER })).kind, 'refused');
  assert.deepEqual(classifyHeartbeatAnswer(422, err('CLOCK_SKEW', { serverTime: MAX_DATE_MS })), { kind: 'clock-skew', serverTime: MAX_DATE_MS, message: 'm-CLOCK_SKEW' });
  const beyond = classifyHeartbeatAnswer(422, err('CLOCK_SKEW', { serverTime: MAX_DATE_MS + 1 }));
  assert.equal(beyond.kind === 'clock-skew' && beyond.serverTime, null);
  assert.doesNotThrow(() => new Date(MAX_DATE_MS).toISOString());
});
