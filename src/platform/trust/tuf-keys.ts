// Ed25519 keys as TUF keys, and TUF metadata signed and counted with them (docs/design.md §21.1).
// Operators keep keys as PEM, as for releases (src/platform/keys.ts); in TUF metadata a key is
// {keytype: "ed25519", scheme: "ed25519", keyval: {public: <64 hex of the raw key>}} under TUF's
// key id. Signatures are made through @tufjs/models' own `Metadata.sign`, over the canonical form
// its `verifyDelegate` checks, never over a form of ours.
import { createPublicKey, type KeyObject, sign } from 'node:crypto';
import { Key, type Metadata, Signature, type Root, type Snapshot, type Targets, type Timestamp } from '@tufjs/models';
import { isEd25519TufKey, tufKeyIdOfJson, tufKeyIdOfKey } from '../../core/trust/key-id.js';
import { rawPublicKey } from '../keys.js';

type AnyMetadata = Metadata<Root | Targets | Snapshot | Timestamp>;

function keyJson(key: KeyObject): { keytype: string; scheme: string; keyval: { public: string } } {
  return { keytype: 'ed25519', scheme: 'ed25519', keyval: { public: rawPublicKey(key).toString('hex') } };
}

// The TUF key id of an Ed25519 key (public or private: the public half's), or of a TUF key model.
export function tufKeyIdOf(key: KeyObject | Key): string {
  return key instanceof Key ? tufKeyIdOfKey(key) : tufKeyIdOfJson(keyJson(key));
}

// The TUF key of an Ed25519 key (a private key gives its public half).
export function tufKeyOf(key: KeyObject): Key {
  const json = keyJson(key);
  return new Key({ keyID: tufKeyIdOfJson(json), keyType: json.keytype, scheme: json.scheme, keyVal: json.keyval });
}

// The node:crypto public key of an Ed25519 TUF key; throws for any other key, or for one
// labelled with an id not its own.
export function publicKeyOfTufKey(key: Key): KeyObject {
  if (!isEd25519TufKey(key)) throw new TypeError(`TUF key ${key.keyID} is not an Ed25519 key under its own key id`);
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(key.keyVal.public as string, 'hex').toString('base64url') }, format: 'jwk' });
}

// Signs `metadata` with `privateKey`, adding its signature or replacing an earlier one by the
// same key; the other keys' signatures stay (a threshold of offline keys signs one at a time).
export function signMetadata(metadata: AnyMetadata, privateKey: KeyObject): void {
  if (privateKey.type !== 'private' || privateKey.asymmetricKeyType !== 'ed25519') throw new TypeError('signing takes an Ed25519 private key');
  const keyID = tufKeyIdOf(privateKey);
  metadata.sign((bytes) => new Signature({ keyID, sig: sign(null, bytes, privateKey).toString('hex') }), true);
}

// How many of `roleKeys` have a signature on `metadata` that verifies (through @tufjs/models'
// own check): what a role's threshold is compared with.
export function signatureCount(metadata: AnyMetadata, roleKeys: Iterable<Key>): number {
  const ok = new Set<string>();
  for (const key of roleKeys) {
    try {
      key.verifySignature(metadata);
      ok.add(key.keyID);
    } catch {
      // Not signed by this key, or not validly: it does not count.
    }
  }
  return ok.size;
}
