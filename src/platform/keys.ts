import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, KeyObject, sign, verify } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { canonicalBytes } from '../core/canonical-json.js';
import type { Envelope } from '../core/release-schemas.js';
import { readFileNoFollow } from './fs-atomic.js';

export const DOMAINS = {
  manifest: 'steward-manifest-v1',
  receipt: 'steward-receipt-v1',
  heartbeat: 'steward-heartbeat-v1',
  enroll: 'steward-enroll-v1',
  // The helper key's signature over the same enrollment payload bytes P (its proof of possession).
  enrollHelper: 'steward-enroll-helper-v1',
} as const;
export type Domain = (typeof DOMAINS)[keyof typeof DOMAINS];

// The raw 32-byte Ed25519 public key inside a KeyObject.
export function rawPublicKey(key: KeyObject): Buffer {
  const pub = key.type === 'private' ? createPublicKey(key) : key;
  const jwk = pub.export({ format: 'jwk' }) as { kty?: string; crv?: string; x?: string };
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || !jwk.x) throw new TypeError('not an Ed25519 key');
  return Buffer.from(jwk.x, 'base64url');
}

// keyIdOf's answers per KeyObject (immutable): the control plane asks for a cached node key's id
// on every heartbeat, and the JWK export behind it costs a tenth of a heartbeat.
const keyIds = new WeakMap<KeyObject, string>();

// The keyId of DESIGN §6: the first 16 hex characters of sha256(raw public key).
export function keyIdOf(key: KeyObject): string {
  let id = keyIds.get(key);
  if (id === undefined) {
    id = createHash('sha256').update(rawPublicKey(key)).digest('hex').slice(0, 16);
    keyIds.set(key, id);
  }
  return id;
}

// A fresh Ed25519 key pair as PEM (PKCS#8 private, SPKI public).
export function generateKeyPair(): { privatePem: string; publicPem: string; keyId: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privatePem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    publicPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
    keyId: keyIdOf(publicKey),
  };
}

// Parses a PEM Ed25519 public key; throws on anything else.
export function parsePublicKey(pem: string | Buffer): KeyObject {
  const key = createPublicKey(pem);
  if (key.asymmetricKeyType !== 'ed25519') throw new TypeError(`not an Ed25519 key (${key.asymmetricKeyType})`);
  return key;
}

// Parses a PEM Ed25519 private key; throws on anything else.
export function parsePrivateKey(pem: string | Buffer): KeyObject {
  const key = createPrivateKey(pem);
  if (key.asymmetricKeyType !== 'ed25519') throw new TypeError(`not an Ed25519 key (${key.asymmetricKeyType})`);
  return key;
}

function signedBytes(domain: string, payload: Buffer): Buffer {
  return Buffer.concat([Buffer.from(domain + '\n', 'utf8'), payload]);
}

// Signs `payload` (canonical JSON) under `domain` into an envelope.
export function signEnvelope(domain: Domain, payload: unknown, privateKey: KeyObject): Envelope {
  const p = canonicalBytes(payload);
  return { payload: p.toString('base64'), sig: signPayloadBytes(domain, p, privateKey), keyId: keyIdOf(privateKey) };
}

// The base64 signature under `domain` over payload bytes P that are already canonical (a second
// signature over an envelope's P, as enrollment's helper key makes).
export function signPayloadBytes(domain: Domain, payload: Buffer, privateKey: KeyObject): string {
  return sign(null, signedBytes(domain, payload), privateKey).toString('base64');
}

const B64_RE = /^[A-Za-z0-9+/]*={0,2}$/;

// The bytes of strict base64 text (canonical padding), or null.
export function strictBase64(s: string): Buffer | null {
  if (s.length % 4 !== 0 || !B64_RE.test(s)) return null;
  const b = Buffer.from(s, 'base64');
  // Re-encoding must give the same text: no non-canonical padding bits.
  return b.toString('base64') === s ? b : null;
}

export type OpenResult =
  | { ok: true; payload: unknown; bytes: Buffer; keyId: string }
  | { ok: false; reason: 'unknown-key' | 'bad-signature' | 'bad-encoding' | 'bad-json' };

// Verifies an envelope's signature over the decoded payload bytes, then parses them.
// The bytes are verified before parsing and never re-canonicalized (DESIGN §6).
export function openEnvelope(envelope: Envelope, domain: Domain, keys: ReadonlyMap<string, KeyObject>): OpenResult {
  const bytes = strictBase64(envelope.payload);
  const checked = verifyEnvelopeBytes(envelope, bytes, domain, keys);
  if (!checked.ok) return checked;
  try {
    return { ok: true, payload: JSON.parse(checked.bytes.toString('utf8')), bytes: checked.bytes, keyId: envelope.keyId };
  } catch {
    return { ok: false, reason: 'bad-json' };
  }
}

// openEnvelope's checks before parsing, for a caller that decoded the payload already
// (`bytes`: strictBase64(envelope.payload), null when it is not strict base64).
export function verifyEnvelopeBytes(envelope: Envelope, bytes: Buffer | null, domain: Domain, keys: ReadonlyMap<string, KeyObject>): { ok: true; bytes: Buffer } | { ok: false; reason: 'unknown-key' | 'bad-signature' | 'bad-encoding' } {
  const key = keys.get(envelope.keyId);
  if (!key) return { ok: false, reason: 'unknown-key' };
  const sig = strictBase64(envelope.sig);
  if (!bytes || !sig || sig.length !== 64) return { ok: false, reason: 'bad-encoding' };
  if (!verify(null, signedBytes(domain, bytes), key, sig)) return { ok: false, reason: 'bad-signature' };
  return { ok: true, bytes };
}

const keyCache = new Map<string, { mtimeMs: number; size: number; key: KeyObject }>();

// Loads every `*.pub` regular file in `dir` as a keyId -> KeyObject map, caching parsed
// keys by path and mtime. A missing folder is an empty map; an unparsable file is skipped
// and reported through `onBadKey`.
export async function loadPublicKeys(dir: string, onBadKey?: (file: string, err: unknown) => void): Promise<Map<string, KeyObject>> {
  const out = new Map<string, KeyObject>();
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return out;
    throw err;
  }
  for (const name of names.sort()) {
    if (!name.endsWith('.pub')) continue;
    const file = path.join(dir, name);
    try {
      const st = await fsp.lstat(file);
      if (!st.isFile()) continue;
      const cached = keyCache.get(file);
      let key = cached && cached.mtimeMs === st.mtimeMs && cached.size === st.size ? cached.key : undefined;
      if (!key) {
        const pem = await readFileNoFollow(file, 16 * 1024);
        if (!pem) continue;
        key = parsePublicKey(pem);
        keyCache.set(file, { mtimeMs: st.mtimeMs, size: st.size, key });
      }
      out.set(keyIdOf(key), key);
    } catch (err) {
      onBadKey?.(file, err);
    }
  }
  return out;
}
