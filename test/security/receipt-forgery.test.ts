import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { checkReceipts } from '../../src/cli/commands/receipts.js';
import { verifyReceipt } from '../../src/platform/verify-receipt.js';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { DOMAINS, keyIdOf, signEnvelope } from '../../src/platform/keys.js';

// The attacker holds the steward user (the agent): it can write any envelope it likes into
// what it relays, but not the helper's private key.
const helper = generateKeyPairSync('ed25519');
const attacker = generateKeyPairSync('ed25519');
const payload = {
  v: 1, nodeId: 'node-1', app: 'web', attemptId: 'a1', seq: 7, fromVersion: '1.0.0', targetVersion: '1.1.0',
  integrity: null, outcome: 'rolled-back', startedAt: 1, updatedAt: 2, reason: { code: 'REPLACEMENT_UNHEALTHY', message: 'probe failed' },
};
const genuine = signEnvelope(DOMAINS.receipt, payload, helper.privateKey);
const b64 = (v: unknown) => canonicalBytes(v).toString('base64');

test('a genuine receipt verifies (the control for every forgery below)', () => {
  assert.deepEqual(verifyReceipt(genuine, helper.publicKey), payload);
});

test('a receipt signed by another key is not verified, even when it claims the helper keyId', () => {
  const forged = signEnvelope(DOMAINS.receipt, { ...payload, outcome: 'active' }, attacker.privateKey);
  assert.equal(verifyReceipt(forged, helper.publicKey), null);
  assert.equal(verifyReceipt({ ...forged, keyId: keyIdOf(helper.publicKey) }, helper.publicKey), null);
});

test('a receipt whose payload was altered after signing is not verified', () => {
  for (const change of [{ outcome: 'active' }, { seq: 8 }, { app: 'api' }, { nodeId: 'node-2' }]) {
    assert.equal(verifyReceipt({ ...genuine, payload: b64({ ...payload, ...change }) }, helper.publicKey), null, JSON.stringify(change));
  }
  // Same JSON, other bytes: verifiers check the bytes, never a re-canonicalized payload.
  const spaced = Buffer.from(JSON.stringify(payload, null, 1)).toString('base64');
  assert.equal(verifyReceipt({ ...genuine, payload: spaced }, helper.publicKey), null);
});

test('a helper signature made for another domain is not a receipt', () => {
  for (const domain of [DOMAINS.manifest, DOMAINS.heartbeat, DOMAINS.enroll]) {
    assert.equal(verifyReceipt(signEnvelope(domain, payload, helper.privateKey), helper.publicKey), null, domain);
  }
});

test('a signed payload that is not a receipt is not verified', () => {
  const notReceipt = signEnvelope(DOMAINS.receipt, { ...payload, extra: true }, helper.privateKey);
  assert.equal(verifyReceipt(notReceipt, helper.publicKey), null);
  assert.equal(verifyReceipt({ payload: 1, sig: null } as never, helper.publicKey), null, 'garbage never throws');
});

test('agentctl marks a forged, altered or other-app receipt NOT VERIFIED and keeps the genuine one', () => {
  const forged = signEnvelope(DOMAINS.receipt, { ...payload, seq: 8 }, attacker.privateKey);
  const altered = { ...genuine, payload: b64({ ...payload, seq: 9, outcome: 'active' }) };
  const rows = checkReceipts([altered, forged, genuine], helper.publicKey);
  assert.deepEqual(rows.map((r) => [r.seq, r.verified]), [[7, true], [8, false], [9, false]]);
  assert.deepEqual(checkReceipts([genuine], helper.publicKey, 'api').map((r) => r.verified), [false], 'asked for api, got web');
  assert.deepEqual(checkReceipts([genuine], null).map((r) => r.verified), [false], 'no helper.pub, nothing verified');
});
