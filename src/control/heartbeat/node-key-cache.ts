// Parsed Ed25519 public keys by their PEM text. Parsing a PEM costs more than checking a
// signature (bench/README.md, "Figures behind choices in the code"), and every heartbeat needs
// its node's key. Keyed by
// the text itself, so a changed or re-enrolled key is simply another entry and never stale.
// Cold at start (each node's first heartbeat after a restart parses its key, once); an
// enrollment puts its node's key in as it commits. Why not warmed at start: bench/README.md, row 7
// round 15.
import type { KeyObject } from 'node:crypto';
import { parsePublicKey } from '../../platform/keys.js';

// ~0.9 KB a key: 65,536 keys (a 60,000-node fleet) hold about 60 MB at most.
export const NODE_KEY_CACHE_SIZE = 65_536;

export interface KeyCache {
  // The parsed key; throws as parsePublicKey does (a failure is not cached).
  parse(pem: string): KeyObject;
  // Puts a key already parsed from `pem` in, as the newest (enrollment: the node's key was
  // parsed to check the enrollment's signature, and its first heartbeat needs it next).
  put(pem: string, key: KeyObject): void;
  // Whether `pem`'s key is held (does not make it the newest).
  has(pem: string): boolean;
}

// A cache that drops the least recently used key when full.
export function createKeyCache(max = NODE_KEY_CACHE_SIZE): KeyCache {
  const keys = new Map<string, KeyObject>();
  const put = (pem: string, key: KeyObject): void => {
    keys.delete(pem);
    if (keys.size >= max) keys.delete(keys.keys().next().value as string);
    keys.set(pem, key);
  };
  return {
    parse(pem) {
      const hit = keys.get(pem);
      if (hit) {
        // Why delete and set: a Map iterates in insertion order, so this makes it the newest.
        keys.delete(pem);
        keys.set(pem, hit);
        return hit;
      }
      const key = parsePublicKey(pem);
      put(pem, key);
      return key;
    },
    put,
    has(pem) {
      return keys.has(pem);
    },
  };
}
