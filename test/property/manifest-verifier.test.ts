// Property tests of the manifest verifier (docs/design.md §3.2, §6; issue 7 item 5): a signed manifest
// changed in any way (its envelope's JSON, its text, the payload's or the signature's bytes,
// the signature's malleable twin) verifies only if the signed bytes, the signature and the
// key id are the ones signed; a payload re-signed by a trusted key verifies only if it is a
// valid, unexpired manifest for the asked app and version. Every refusal is a StewardError with
// one of the verifier's codes.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import fc from 'fast-check';
import { StewardError } from '../../src/core/errors.js';
import { envelopeSchema, manifestPayloadSchema, type Envelope } from '../../src/core/release-schemas.js';
import { DOMAINS, generateKeyPair, parsePrivateKey } from '../../src/platform/keys.js';
import { verifyManifest } from '../../src/helper/stage/verify-manifest.js';
import { trustScope } from '../../src/platform/trusted-file.js';
import { base64TextEdit, mutatedBytes, mutatedJson, nearValidJsonBytes } from './mutate.js';
import { signAny } from './sign-any.js';
import { checkProperty, guarded, runsMade } from './property-run.js';
import { INTEGRITY } from './requests.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-manifest-'));
const trustedDir = path.join(dir, 'trusted-keys', 'web');
mkdirSync(trustedDir, { recursive: true });
const trusted = generateKeyPair();
const untrusted = generateKeyPair();
writeFileSync(path.join(trustedDir, `${trusted.keyId}.pub`), trusted.publicPem);
after(() => {
  rmSync(dir, { recursive: true, force: true });
  process.stdout.write(`# ${runsMade.count} runs in this file\n`);
});

const NOW = 1_800_000_000_000;
const expect = { app: 'web', version: '1.2.0', trustedDir, trust: trustScope(dir), now: NOW };
const CODES = new Set(['SIGNATURE_INVALID', 'RELEASE_INVALID', 'MANIFEST_EXPIRED']);
const goodPayload = { name: 'web', version: '1.2.0', url: 'https://releases.example/web-1.2.0.tgz', size: 1234, integrity: INTEGRITY, expires: NOW + 86_400_000 };

const signManifest = (payload: unknown, key: { privatePem: string }) => signAny(DOMAINS.manifest, payload, parsePrivateKey(key.privatePem));
const good = signManifest(goodPayload, trusted);

// The same signature with S + L (the group order): a valid-looking twin that must not verify.
const L = 2n ** 252n + 27742317777372353535851937790883648493n;
function malleable(sigB64: string): string {
  const sig = Buffer.from(sigB64, 'base64');
  let s = 0n;
  for (let i = 31; i >= 0; i--) s = (s << 8n) | BigInt(sig[32 + i] as number);
  s += L;
  const out = Buffer.from(sig);
  for (let i = 0; i < 32; i++) out[32 + i] = Number((s >> BigInt(8 * i)) & 0xffn);
  return out.toString('base64');
}

// The verdict: 'ok' or the refusal's code; anything but a StewardError of CODES fails.
async function verdict(envelope: Envelope): Promise<string> {
  try {
    const v = await verifyManifest(envelope, expect);
    assert.ok(manifestPayloadSchema.safeParse(v.payload).success);
    return 'ok';
  } catch (err) {
    assert.ok(err instanceof StewardError, `threw ${String(err)}`);
    assert.ok(CODES.has(err.code), `${err.code}: ${err.message}`);
    return err.code;
  }
}

test('the control case: the signed manifest verifies, and its S+L twin does not', async () => {
  assert.equal(await verdict(good), 'ok');
  assert.equal(await verdict({ ...good, sig: malleable(good.sig) }), 'SIGNATURE_INVALID');
});

test('a signed manifest changed without the key verifies only when payload, signature and key id are the signed ones', async () => {
  const b64edit = (s: string) => mutatedBytes(Buffer.from(s, 'base64'), 3).map((b) => b.toString('base64'));
  const envelopes = fc.oneof(
    // The envelope's JSON text or structure, as a request line would carry it.
    nearValidJsonBytes(good).map((b) => {
      try {
        return JSON.parse(b.toString('utf8')) as unknown;
      } catch {
        return null;
      }
    }),
    // The bytes under the base64: the signed payload, or the signature.
    b64edit(good.payload).map((payload) => ({ ...good, payload })),
    b64edit(good.sig).map((sig) => ({ ...good, sig })),
    fc.constant({ ...good, sig: malleable(good.sig) }),
    // The base64 text itself, padding bits included.
    base64TextEdit(good.payload).map((payload) => ({ ...good, payload })),
    base64TextEdit(good.sig).map((sig) => ({ ...good, sig })),
    fc.constant({ ...good, keyId: untrusted.keyId }),
  );
  const tally = new Map<string, number>();
  await checkProperty(
    'verifyManifest: no unsigned change verifies',
    fc.asyncProperty(envelopes, guarded(async (raw) => {
      // What the request schema lets through is what reaches the verifier.
      const env = envelopeSchema.safeParse(raw);
      const v = env.success ? await verdict(env.data) : 'schema';
      tally.set(v, (tally.get(v) ?? 0) + 1);
      if (v === 'ok') assert.deepEqual([env.data?.payload, env.data?.sig, env.data?.keyId], [good.payload, good.sig, good.keyId], 'a changed manifest verified');
    })),
    1000,
  );
  process.stdout.write(`# verdicts: ${JSON.stringify(Object.fromEntries([...tally].sort()))}\n`);
});

test('a manifest re-signed after a change verifies only under a trusted key and as a valid, unexpired manifest of the asked release', async () => {
  // Also valid manifests of another release, or expired: they pass the schema and must still fail.
  const otherRelease = fc
    .record({ name: fc.constantFrom('web', 'api'), version: fc.constantFrom('1.2.0', '1.2.1', '1.2.0-rc.1', '0.0.1'), expires: fc.constantFrom(NOW + 1, NOW, NOW - 1, goodPayload.expires) })
    .map((o) => ({ ...goodPayload, ...o }));
  const arb = fc.tuple(fc.oneof({ weight: 3, arbitrary: mutatedJson(goodPayload, 2) }, { weight: 1, arbitrary: otherRelease }), fc.boolean());
  const tally = new Map<string, number>();
  await checkProperty(
    'verifyManifest: re-signed changes',
    fc.asyncProperty(arb, guarded(async ([payload, byTrusted]) => {
      const key = byTrusted ? trusted : untrusted;
      const env = envelopeSchema.safeParse(signManifest(payload, key));
      if (!env.success) return; // a payload over 48 KiB: the request schema refuses it first
      const v = await verdict(env.data);
      tally.set(v, (tally.get(v) ?? 0) + 1);
      if (!byTrusted) assert.equal(v, 'SIGNATURE_INVALID');
      if (v !== 'ok') return;
      const m = manifestPayloadSchema.safeParse(payload);
      assert.ok(m.success, 'an invalid manifest verified');
      assert.deepEqual([m.data.name, m.data.version], ['web', '1.2.0'], 'a manifest of another release verified');
      assert.ok(m.data.expires > NOW, 'an expired manifest verified');
    })),
    600,
  );
  process.stdout.write(`# verdicts: ${JSON.stringify(Object.fromEntries([...tally].sort()))}\n`);
});
