import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyHeartbeatAnswer } from '../../src/agent/heartbeat-answer.js';

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
