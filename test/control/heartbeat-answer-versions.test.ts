import { test } from 'node:test';
import assert from 'node:assert/strict';
import type http from 'node:http';
import { withAcceptedVersions } from '../../src/control/server/control-server.js';
import { parseOfferedVersions } from '../../src/core/control-plane-accepts.js';

// docs/design.md §16 and §17: a heartbeat answer lists the receipt versions both the control plane
// and the agent take (the agent's RECEIPT_VERSIONS_HEADER), and carries a desired entry's `watchMs`
// only to an agent that offers payload v3: the answers of earlier agents are strict.

const entry = { app: 'web', version: '2.0.0', attemptId: 'r1-0123456789abcdef', manifest: { payload: 'x', signature: 'y', keyId: '0123456789abcdef' }, watchMs: 60_000 };
const answer = () => ({ status: 200, body: { ackedSeqs: [], desired: [entry], heartbeatSeconds: 30 } });
const req = (header?: string) => ({ headers: header === undefined ? {} : { 'steward-receipt-versions': header } }) as unknown as http.IncomingMessage;

test('an agent that offers 1, 2, 3 is told 1, 2, 3 and gets watchMs', () => {
  const out = withAcceptedVersions(req('1, 2, 3'), answer()).body as any;
  assert.deepEqual(out.receiptVersions, [1, 2, 3]);
  assert.equal(out.desired[0].watchMs, 60_000);
});

test('an agent that offers 1, 2 is told 1, 2 (not 3, which it cannot relay) and gets no watchMs', () => {
  const out = withAcceptedVersions(req('1, 2'), answer()).body as any;
  assert.deepEqual(out.receiptVersions, [1, 2]);
  assert.equal('watchMs' in out.desired[0], false);
  assert.deepEqual(Object.keys(out.desired[0]).sort(), ['app', 'attemptId', 'manifest', 'version']);
});

test('an agent that sends no header (before payload v2) gets neither receiptVersions nor watchMs', () => {
  const out = withAcceptedVersions(req(), answer()).body as any;
  assert.equal('receiptVersions' in out, false);
  assert.equal('watchMs' in out.desired[0], false);
});

test('the offered list is read leniently: junk, repeats and huge numbers are dropped', () => {
  assert.deepEqual(parseOfferedVersions('1, 2, 3'), [1, 2, 3]);
  assert.deepEqual(parseOfferedVersions(' 3,1 ,x, 2,2, 99999999, -1, 0'), [3, 1, 2]);
  assert.deepEqual(parseOfferedVersions(['1', '3']), [1, 3]);
  assert.deepEqual(parseOfferedVersions(undefined), []);
  const out = withAcceptedVersions(req('garbage'), answer()).body as any;
  assert.deepEqual(out.receiptVersions, [1], 'v1 is always taken');
});

test('an answer that is not a 200 is left as it is', () => {
  const refused = { status: 409, body: { error: { code: 'SEQ_REPLAYED', message: 'x' } } };
  assert.equal(withAcceptedVersions(req('1, 2, 3'), refused), refused);
});

// docs/design.md §18: a desired entry's downgrade authorization goes only to an agent that names
// `downgrade` in its DESIRED_FIELDS_HEADER (an earlier agent would refuse the whole answer).
const withDowngrade = () => ({ status: 200, body: { ackedSeqs: [], desired: [{ ...entry, downgrade: { payload: 'e30=', sig: 'z', keyId: 'fedcba9876543210' } }], heartbeatSeconds: 30 } });
const reqWith = (headers: Record<string, string>) => ({ headers }) as unknown as http.IncomingMessage;

test('an agent that names downgrade in its desired-fields header gets the authorization; one that does not, or names only unknown fields, gets the entry without it', () => {
  const named = withAcceptedVersions(reqWith({ 'steward-receipt-versions': '1, 2, 3', 'steward-desired-fields': 'downgrade' }), withDowngrade()).body as any;
  assert.equal(named.desired[0].downgrade.keyId, 'fedcba9876543210');
  assert.equal(named.desired[0].watchMs, 60_000);
  const others: Array<Record<string, string>> = [{ 'steward-receipt-versions': '1, 2, 3' }, { 'steward-desired-fields': 'downgrades, pin' }, {}];
  for (const headers of others) {
    const out = withAcceptedVersions(reqWith(headers), withDowngrade()).body as any;
    assert.equal('downgrade' in out.desired[0], false, JSON.stringify(headers));
    assert.equal(out.desired[0].version, '2.0.0');
  }
});
