import { test } from 'node:test';
import assert from 'node:assert/strict';
import type http from 'node:http';
import { withAcceptedVersions } from '../../src/control/server/control-server.js';
import { parseOfferedVersions } from '../../src/core/control-plane-accepts.js';
import { desiredEntrySchema, OPTIONAL_DESIRED_FIELDS } from '../../src/core/control-api.js';
import * as z from '../../src/core/zod-mini.js';

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

test("a desired entry's fetchUntil goes only to an agent that names it in steward-desired-fields (docs/design.md §18)", () => {
  const withUntil = () => ({ status: 200, body: { ackedSeqs: [], desired: [{ ...entry, fetchUntil: 1_800_000_000_000 }], heartbeatSeconds: 30 } });
  const ask = (headers: Record<string, string>) => withAcceptedVersions({ headers } as unknown as http.IncomingMessage, withUntil()).body as any;
  assert.equal(ask({ 'steward-receipt-versions': '1, 2, 3', 'steward-desired-fields': 'fetchUntil' }).desired[0].fetchUntil, 1_800_000_000_000);
  assert.equal(ask({ 'steward-receipt-versions': '1, 2, 3', 'steward-desired-fields': 'somethingElse, fetchUntil ' }).desired[0].fetchUntil, 1_800_000_000_000);
  assert.equal('fetchUntil' in ask({ 'steward-receipt-versions': '1, 2, 3' }).desired[0], false, 'an agent from before it');
  assert.equal('fetchUntil' in ask({}).desired[0], false);
  assert.equal('fetchUntil' in ask({ 'steward-desired-fields': 'fetchUntilNot' }).desired[0], false);
});

test("a desired entry's indexedManifest goes only to an agent that names it in steward-desired-fields; an older agent's answer parses under its strict entry schema (docs/design.md §20.2)", () => {
  const indexedManifest = { payload: 'e30=', sig: 'z', keyId: '0123456789abcdef' };
  const manifest = { payload: 'e30=', sig: 'y', keyId: '0123456789abcdef' };
  const withIndexed = () => ({ status: 200, body: { ackedSeqs: [], desired: [{ ...entry, manifest, indexedManifest }], heartbeatSeconds: 30 } });
  const ask = (headers: Record<string, string>) => withAcceptedVersions({ headers } as unknown as http.IncomingMessage, withIndexed()).body as any;
  const everything = OPTIONAL_DESIRED_FIELDS.join(', ');
  const named = ask({ 'steward-receipt-versions': '1, 2, 3', 'steward-desired-fields': everything });
  assert.deepEqual(named.desired[0].indexedManifest, indexedManifest);
  assert.equal(desiredEntrySchema.safeParse(named.desired[0]).success, true);
  // An agent of §18 (downgrade, fetchUntil, rollback) and one from before the header: without it.
  const older = z.strictObject({ ...desiredEntrySchema.def.shape, indexedManifest: z.optional(z.never()) });
  const headerSets: Array<Record<string, string>> = [{ 'steward-receipt-versions': '1, 2, 3', 'steward-desired-fields': 'downgrade, fetchUntil, rollback' }, { 'steward-receipt-versions': '1, 2, 3' }, {}];
  for (const headers of headerSets) {
    const out = ask(headers);
    assert.equal('indexedManifest' in out.desired[0], false, JSON.stringify(headers));
    assert.deepEqual(out.desired[0].manifest, manifest, 'the plain manifest goes to every agent');
    assert.equal(older.safeParse(out.desired[0]).success, true, JSON.stringify(headers));
  }
});
