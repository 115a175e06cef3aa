// Signs any JSON value as a key holder could: over its JSON.stringify bytes, canonical or not
// (signEnvelope refuses floats and unsafe integers, which an attacker's signer need not).
import { sign, type KeyObject } from 'node:crypto';
import type { Envelope } from '../../src/core/release-schemas.js';
import { keyIdOf, type Domain } from '../../src/platform/keys.js';

export function signAny(domain: Domain, payload: unknown, key: KeyObject): Envelope {
  const bytes = Buffer.from(JSON.stringify(payload) ?? 'null');
  const sig = sign(null, Buffer.concat([Buffer.from(domain + '\n'), bytes]), key);
  return { payload: bytes.toString('base64'), sig: sig.toString('base64'), keyId: keyIdOf(key) };
}
