import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { DOMAINS, generateKeyPair, keyIdOf, openEnvelope, parsePrivateKey, parsePublicKey, rawPublicKey, signEnvelope, strictBase64, verifyEnvelopeBytes, verifyEnvelopeBytesInPool } from '../../src/platform/keys.js';
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

test('the signature checked in the thread pool gives the same verdict as the synchronous check', async () => {
  const pair = generateKeyPair();
  const priv = parsePrivateKey(pair.privatePem);
  const pub = parsePublicKey(pair.publicPem);
  const other = parsePublicKey(generateKeyPair().publicPem);
  const keys = new Map([[keyIdOf(pub), pub]]);
  const good = signEnvelope(DOMAINS.heartbeat, { nodeId: 'n1', seq: 1 }, priv);
  const sig = Buffer.from(good.sig, 'base64');
  const flipped = Buffer.from(sig);
  flipped[10]! ^= 1;
  const payload = Buffer.from(good.payload, 'base64');
  const cases = [
    { name: 'good', env: good, domain: DOMAINS.heartbeat, want: 'ok' },
    { name: 'another domain', env: good, domain: DOMAINS.receipt, want: 'bad-signature' },
    { name: 'a flipped bit in the signature', env: { ...good, sig: flipped.toString('base64') }, domain: DOMAINS.heartbeat, want: 'bad-signature' },
    { name: 'another payload', env: { ...good, payload: Buffer.concat([payload, Buffer.from(' ')]).toString('base64') }, domain: DOMAINS.heartbeat, want: 'bad-signature' },
    { name: 'a short signature', env: { ...good, sig: sig.subarray(0, 63).toString('base64') }, domain: DOMAINS.heartbeat, want: 'bad-encoding' },
    { name: 'a key nobody trusts', env: { ...good, keyId: keyIdOf(other) }, domain: DOMAINS.heartbeat, want: 'unknown-key' },
  ];
  for (const c of cases) {
    const bytes = strictBase64(c.env.payload);
    const sync = verifyEnvelopeBytes(c.env, bytes, c.domain, keys);
    const pooled = await verifyEnvelopeBytesInPool(c.env, bytes, c.domain, keys);
    assert.deepEqual(pooled, sync, c.name);
    assert.equal(pooled.ok ? 'ok' : pooled.reason, c.want, c.name);
  }
  // Many at once (the pool runs several): each answer is its own envelope's.
  const many = Array.from({ length: 40 }, (_, i) => (i % 3 === 0 ? { ...good, sig: flipped.toString('base64') } : good));
  const got = await Promise.all(many.map((e) => verifyEnvelopeBytesInPool(e, strictBase64(e.payload), DOMAINS.heartbeat, keys)));
  assert.deepEqual(got.map((r) => r.ok), many.map((_, i) => i % 3 !== 0));
});
