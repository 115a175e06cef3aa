import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, KeyObject, sign, verify } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { canonicalBytes } from '../core/canonical-json.js';
import type { Envelope } from '../core/release-schemas.js';
import { readRegularFile } from './fs-atomic.js';
import { fileTrustProblem, folderTrustProblem, type TrustScope } from './trusted-file.js';

export const DOMAINS = {
  manifest: 'steward-manifest-v1',
  receipt: 'steward-receipt-v1',
  heartbeat: 'steward-heartbeat-v1',
  enroll: 'steward-enroll-v1',
  // The helper key's signature over the same enrollment payload bytes P (its proof of possession).
  enrollHelper: 'steward-enroll-helper-v1',
  // The node key's signature over `<nodeId>\n<expiresAt>`: a download by an enrolled node (download-auth.ts).
  download: 'steward-download-v1',
  // A release key's word that hosts may go back to an older version of its app (docs/design.md §18).
  downgrade: 'steward-downgrade-v1',
  // The node key's signature over `<nodeId>\n<expiresAt>`: a wake-up wait by an enrolled node (wait-auth.ts).
  wait: 'steward-wait-v1',
  // The director's (steward-control's online key listed in the TUF root) word that one node runs
  // one app's version for one attempt (docs/design.md §21.1).
  directive: 'steward-directive-v1',
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

// The keyId of docs/design.md §6: the first 16 hex characters of sha256(raw public key).
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
// The bytes are verified before parsing and never re-canonicalized (docs/design.md §6).
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
export function verifyEnvelopeBytes(envelope: Envelope, bytes: Buffer | null, domain: Domain, keys: ReadonlyMap<string, KeyObject>): VerifiedBytes {
  const pre = beforeVerify(envelope, bytes, keys);
  if (!pre.ok) return pre;
  if (!verify(null, signedBytes(domain, pre.bytes), pre.key, pre.sig)) return { ok: false, reason: 'bad-signature' };
  return { ok: true, bytes: pre.bytes };
}

export type VerifiedBytes = { ok: true; bytes: Buffer } | { ok: false; reason: 'unknown-key' | 'bad-signature' | 'bad-encoding' };

// verifyEnvelopeBytes with the signature checked in libuv's thread pool (node:crypto's verify
// with a callback), so that a server's main thread goes on reading and committing meanwhile.
// The same checks and the same answers; an error from the job (none is expected for an Ed25519
// key and a 64-byte signature) is a signature that does not hold.
export function verifyEnvelopeBytesInPool(envelope: Envelope, bytes: Buffer | null, domain: Domain, keys: ReadonlyMap<string, KeyObject>): Promise<VerifiedBytes> {
  const pre = beforeVerify(envelope, bytes, keys);
  if (!pre.ok) return Promise.resolve(pre);
  return new Promise((resolve) => {
    verify(null, signedBytes(domain, pre.bytes), pre.key, pre.sig, (err, holds) => {
      resolve(!err && holds === true ? { ok: true, bytes: pre.bytes } : { ok: false, reason: 'bad-signature' });
    });
  });
}

function beforeVerify(envelope: Envelope, bytes: Buffer | null, keys: ReadonlyMap<string, KeyObject>): { ok: true; key: KeyObject; sig: Buffer; bytes: Buffer } | { ok: false; reason: 'unknown-key' | 'bad-encoding' } {
  const key = keys.get(envelope.keyId);
  if (!key) return { ok: false, reason: 'unknown-key' };
  const sig = strictBase64(envelope.sig);
  if (!bytes || !sig || sig.length !== 64) return { ok: false, reason: 'bad-encoding' };
  return { ok: true, key, sig, bytes };
}

// Parsed keys by path, valid while the file's inode, ctime (owner and mode changes), mtime and
// size stay the same; the trust rule is checked on every load all the same.
const keyCache = new Map<string, { stamp: string; key: KeyObject }>();

function stampOf(st: { ino: number; ctimeMs: number; mtimeMs: number; size: number }): string {
  return `${st.ino}:${st.ctimeMs}:${st.mtimeMs}:${st.size}`;
}

export interface TrustedKeys {
  // keyId -> key, for every *.pub that passed the trust rule and parsed.
  keys: Map<string, KeyObject>;
  // The *.pub files whose keys are trusted.
  files: string[];
  // What was not trusted and why: a *.pub file, or the folder itself when a folder on its path
  // breaks the rule (then none of its keys is).
  ignored: Array<{ file: string; why: string }>;
}

// Loads the Ed25519 keys of every `*.pub` in `dir` that the trust rule (trusted-file.ts) lets
// root rely on: a regular file, never a symlink, owned by root and not group/other-writable, in
// folders that are too. A bad file is ignored and reported, never the reason to distrust the
// good keys beside it: only root could have put it in a folder that passes the rule. A missing
// folder holds no keys.
export async function loadTrustedKeys(folder: string, scope: TrustScope): Promise<TrustedKeys> {
  // The folder checked is the folder listed: `..` is resolved the same way for both.
  const dir = path.resolve(folder);
  const out: TrustedKeys = { keys: new Map(), files: [], ignored: [] };
  const unfit = await folderTrustProblem(dir, scope);
  if (unfit) {
    out.ignored.push({ file: dir, why: unfit });
    return out;
  }
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
    const got = await loadKeyFile(file, scope);
    if (got === null) continue;
    if ('why' in got) {
      out.ignored.push({ file, why: got.why });
      continue;
    }
    out.keys.set(keyIdOf(got.key), got.key);
    out.files.push(file);
  }
  return out;
}

async function loadKeyFile(file: string, scope: TrustScope): Promise<{ key: KeyObject } | { why: string } | null> {
  let st;
  try {
    st = await fsp.lstat(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    return { why: `${file}: ${(err as Error).message}` };
  }
  if (st.isSymbolicLink()) return { why: `${file} is a symlink (not followed)` };
  if (!st.isFile()) return { why: `${file} is not a regular file` };
  const bad = fileTrustProblem(file, st.uid, st.mode & 0o7777, scope);
  if (bad) return { why: bad };
  const cached = keyCache.get(file);
  if (cached && cached.stamp === stampOf(st)) return { key: cached.key };
  let got;
  try {
    // The folder passed the rule, so nobody else can swap the file between the lstat and here;
    // its fd's owner and mode are checked once more all the same.
    got = await readRegularFile(file, 16 * 1024);
  } catch (err) {
    return { why: `${file}: ${(err as Error).message}` };
  }
  if (!got) return null;
  const still = fileTrustProblem(file, got.uid, got.mode, scope);
  if (still) return { why: still };
  try {
    const key = parsePublicKey(got.bytes);
    keyCache.set(file, { stamp: stampOf(st), key });
    return { key };
  } catch (err) {
    return { why: `${file} is not an Ed25519 public key in PEM (${(err as Error).message})` };
  }
}
