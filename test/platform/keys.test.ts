import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { DOMAINS, generateKeyPair, openEnvelope, parsePrivateKey, parsePublicKey, rawPublicKey, signEnvelope } from '../../src/platform/keys.js';
import { canonicalJson } from '../../src/core/canonical-json.js';

test('keyId is the first 16 hex characters of sha256 of the raw public key', () => {
  const kp = generateKeyPair();
  const raw = rawPublicKey(parsePublicKey(kp.publicPem));
  assert.equal(raw.length, 32);
  assert.equal(kp.keyId, createHash('sha256').update(raw).digest('hex').slice(0, 16));
});

test('an envelope signs the domain line and the canonical payload, and opens only under its domain', () => {
  const kp = generateKeyPair();
  const keys = new Map([[kp.keyId, parsePublicKey(kp.publicPem)]]);
  const env = signEnvelope(DOMAINS.manifest, { b: 1, a: 'x' }, parsePrivateKey(kp.privatePem));
  assert.equal(Buffer.from(env.payload, 'base64').toString(), canonicalJson({ a: 'x', b: 1 }));
  const ok = openEnvelope(env, DOMAINS.manifest, keys);
  assert.ok(ok.ok);
  assert.deepEqual(ok.ok && ok.payload, { a: 'x', b: 1 });
  assert.deepEqual(openEnvelope(env, DOMAINS.receipt, keys), { ok: false, reason: 'bad-signature' });
  assert.deepEqual(openEnvelope(env, DOMAINS.manifest, new Map()), { ok: false, reason: 'unknown-key' });
  assert.deepEqual(openEnvelope({ ...env, sig: env.sig.slice(0, -4) }, DOMAINS.manifest, keys), { ok: false, reason: 'bad-encoding' });
});

test('a non-Ed25519 key is refused', async () => {
  const { generateKeyPairSync } = await import('node:crypto');
  const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  assert.throws(() => parsePublicKey(publicKey.export({ format: 'pem', type: 'spki' })), /not an Ed25519 key/);
});
