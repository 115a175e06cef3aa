// TUF's key id (docs/design.md §21.1): the hex sha256 of the canonical JSON of the key object
// `{keytype, scheme, keyval: {public}}` (and any other field the key carries). Not the keyId of
// docs/design.md §6, which is over the raw key bytes: TUF clients compute this one, so a key's id
// in our metadata is the one every TUF implementation expects.
import { createHash } from 'node:crypto';
import type { Key } from '@tufjs/models';
import { canonicalJson } from '../canonical-json.js';

// Our canonical JSON equals TUF's (OLPC canonical JSON) for a key object: both sort keys and
// write no whitespace, and they differ only in escaping control characters, which no key type,
// scheme or hex key holds (a key whose fields hold one is refused by isEd25519TufKey).
export function tufKeyIdOfJson(key: Record<string, unknown>): string {
  return createHash('sha256').update(canonicalJson(key), 'utf8').digest('hex');
}

// The TUF key id of a key model, from its contents (never from the id it was labelled with).
export function tufKeyIdOfKey(key: Key): string {
  return tufKeyIdOfJson(key.toJSON());
}

const HEX_KEY_RE = /^[0-9a-f]{64}$/;

// Whether a TUF key is the only kind steward signs with: Ed25519, its public key as 64 lowercase
// hex characters of the raw 32 bytes, labelled with its own TUF key id.
export function isEd25519TufKey(key: Key): boolean {
  const pub = key.keyVal.public;
  return (
    key.keyType === 'ed25519' &&
    key.scheme === 'ed25519' &&
    typeof pub === 'string' &&
    HEX_KEY_RE.test(pub) &&
    Object.keys(key.keyVal).length === 1 &&
    Object.keys(key.unrecognizedFields ?? {}).length === 0 &&
    key.keyID === tufKeyIdOfKey(key)
  );
}
