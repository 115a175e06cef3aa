import type { ManifestPayload } from './release-schemas.js';

// Whether two manifests name the same release bytes (docs/design.md §20.2): app, version, url,
// size and integrity. The plain manifest and the indexed one of a release differ only in `index`
// (and, for the helper, possibly in expiry: each is checked for it on its own).
export function sameRelease(a: ManifestPayload, b: ManifestPayload): boolean {
  return a.name === b.name && a.version === b.version && a.url === b.url && a.size === b.size && a.integrity === b.integrity;
}
