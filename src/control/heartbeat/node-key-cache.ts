// Parsed Ed25519 public keys by their PEM text. Parsing a PEM costs more than checking a
// signature (bench/README.md, "Figures behind choices in the code"), and every heartbeat needs
// its node's key. Keyed by
// the text itself, so a changed or re-enrolled key is simply another entry and never stale.
import type { KeyObject } from 'node:crypto';
import { parsePublicKey } from '../../platform/keys.js';

// ~0.9 KB a key: 65,536 keys (a 60,000-node fleet) hold about 60 MB at most.
export const NODE_KEY_CACHE_SIZE = 65_536;

export interface KeyCache {
  // The parsed key; throws as parsePublicKey does (a failure is not cached).
  parse(pem: string): KeyObject;
}

// A cache that drops the least recently used key when full.
export function createKeyCache(max = NODE_KEY_CACHE_SIZE): KeyCache {
  const keys = new Map<string, KeyObject>();
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
      if (keys.size >= max) keys.delete(keys.keys().next().value as string);
      keys.set(pem, key);
      return key;
    },
  };
}
