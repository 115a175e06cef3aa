import { StewardError } from '../../core/errors.js';
import { mustParse } from '../../core/must-parse.js';
import { manifestPayloadSchema, type Envelope, type ManifestPayload } from '../../core/release-schemas.js';
import { DOMAINS, loadTrustedKeys, openEnvelope } from '../../platform/keys.js';
import { logger } from '../../platform/log.js';
import { trustRule, type TrustScope } from '../../platform/trusted-file.js';
import { sameRelease } from '../../core/same-release.js';

const log = logger('helper:stage');

export interface VerifiedManifest {
  payload: ManifestPayload;
  keyId: string;
}

// Verifies a manifest envelope against the keys trusted for `app` (docs/design.md §3.2, §6):
// the signature over the exact payload bytes first, then the payload's schema, app,
// version and expiry. Every failure is a StewardError with its reason code. A key file that
// breaks the trust rule (trusted-file.ts) is ignored, logged, and named if the manifest is
// then refused.
export async function verifyManifest(
  envelope: Envelope,
  expect: { app: string; version: string; trustedDir: string; trust: TrustScope; now: number },
): Promise<VerifiedManifest> {
  const { keys, ignored } = await loadTrustedKeys(expect.trustedDir, expect.trust);
  for (const i of ignored) log('ignoring an untrusted release key of app=%s: %s', expect.app, i.why);
  const notTrusted = ignored.length ? `; not trusted: ${ignored.map((i) => i.why).join('; ')} (${trustRule(expect.trust)})` : '';
  if (keys.size === 0) {
    throw new StewardError('SIGNATURE_INVALID', `no keys are trusted for app ${expect.app} (${expect.trustedDir} holds no trusted *.pub)${notTrusted}`);
  }
  const opened = openEnvelope(envelope, DOMAINS.manifest, keys);
  if (!opened.ok) {
    const why = {
      'unknown-key': `is signed by key ${envelope.keyId}, which is not trusted for app ${expect.app} (${expect.trustedDir})${notTrusted}`,
      'bad-signature': `signature does not verify with trusted key ${envelope.keyId}`,
      'bad-encoding': 'payload or signature is not canonical base64 of the right length',
      'bad-json': 'payload is not JSON',
    }[opened.reason];
    throw new StewardError('SIGNATURE_INVALID', `manifest for ${expect.app} ${expect.version}: ${why}`);
  }
  const m = mustParse(manifestPayloadSchema, opened.payload, 'RELEASE_INVALID', `manifest for ${expect.app} ${expect.version}`);
  if (m.name !== expect.app) {
    throw new StewardError('RELEASE_INVALID', `manifest is for app ${m.name}, not ${expect.app}`);
  }
  if (m.version !== expect.version) {
    throw new StewardError('RELEASE_INVALID', `manifest is for ${m.name} ${m.version}, not ${expect.version}`);
  }
  if (m.expires <= expect.now) {
    throw new StewardError(
      'MANIFEST_EXPIRED',
      `manifest for ${m.name} ${m.version} expired at ${new Date(m.expires).toISOString()}`,
    );
  }
  return { payload: m, keyId: opened.keyId };
}

// Verifies the indexed manifest that came with `plain` (docs/design.md §20.2) exactly as
// verifyManifest does (the same trusted keys, signature, schema, app, version, expiry), and holds
// it to be the same release: the same url, size and integrity as the plain manifest, with an
// index. Returns that index. Any failure refuses the whole request, with the code of the check
// that failed and a message naming the indexed manifest: an indexed manifest that does not match
// its plain one was made or changed by someone other than the release key's holder and the
// catalog (which refuses such a pair), so nothing it came with is staged.
export async function verifyIndexedManifest(
  envelope: Envelope,
  plain: ManifestPayload,
  expect: { app: string; version: string; trustedDir: string; trust: TrustScope; now: number },
): Promise<NonNullable<ManifestPayload['index']>> {
  let m: VerifiedManifest;
  try {
    m = await verifyManifest(envelope, expect);
  } catch (err) {
    if (!(err instanceof StewardError)) throw err;
    throw new StewardError(err.code, `the indexed manifest of ${expect.app} ${expect.version}: ${err.message}`, { cause: err });
  }
  if (!sameRelease(plain, m.payload)) {
    throw new StewardError('INTEGRITY_MISMATCH', `the indexed manifest of ${expect.app} ${expect.version} names other bytes than its manifest (url, size or integrity differ)`);
  }
  if (!m.payload.index) throw new StewardError('RELEASE_INVALID', `the indexed manifest of ${expect.app} ${expect.version} names no file index`);
  return m.payload.index;
}
