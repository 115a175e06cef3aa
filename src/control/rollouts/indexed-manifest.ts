// Which indexed manifest of a release the control plane sends (docs/design.md §20.2).
import { envelopeSchema, manifestPayloadSchema, type Envelope, type ManifestPayload } from '../../core/release-schemas.js';
import { sameRelease } from '../../core/same-release.js';
import type { ReleaseRow } from '../store/store.js';

// The payload of an envelope as the manifest schema reads it, or null.
function payloadOf(e: Envelope): ManifestPayload | null {
  try {
    const r = manifestPayloadSchema.safeParse(JSON.parse(Buffer.from(e.payload, 'base64').toString('utf8')));
    return r.success ? r.data : null;
  } catch {
    return null;
  }
}

// The release's indexed manifest, when the row holds one that is the plain manifest plus an
// index: an envelope, signed by the same key, naming the same app, version, url, size, integrity
// and expiry, with an `index`. Anything else (the database is not trusted; a steward-control from
// before §20.2 sharing this database refreshed the plain manifest and left the indexed one as it
// was) is not sent, and the host stages from the tarball. Whether it verifies is the host's check.
export function indexedManifestOf(release: Pick<ReleaseRow, 'manifest' | 'indexedManifest'>): Envelope | null {
  if (!release.indexedManifest) return null;
  const ok = envelopeSchema.safeParse(release.indexedManifest);
  if (!ok.success || ok.data.keyId !== release.manifest.keyId) return null;
  const plain = payloadOf(release.manifest);
  const indexed = payloadOf(ok.data);
  if (!plain || !indexed || !indexed.index) return null;
  return sameRelease(plain, indexed) && plain.expires === indexed.expires ? ok.data : null;
}
