import { createPublicKey, type KeyObject } from 'node:crypto';
import { StewardError } from '../core/errors.js';
import type { HostPaths } from '../core/paths.js';
import { generateKeyPair, keyIdOf, parsePrivateKey, parsePublicKey, rawPublicKey } from '../platform/keys.js';
import { logger } from '../platform/log.js';
import { ensureDir, readRegularFile, writeFileAtomic } from '../platform/fs-atomic.js';
import { readTrustedFile, trustRule, trustScope, type TrustScope } from '../platform/trusted-file.js';

const log = logger('helper:receipts');
const MAX_PEM = 16 * 1024;

export interface HelperKey {
  privateKey: KeyObject;
  publicKey: KeyObject;
  keyId: string;
}

// Parsed once per helper (FACTS: parsing the PEM on every signature is 12x slower).
// A key replaced on disk while the helper runs takes effect at its next start.
const cache = new Map<string, Promise<HelperKey>>();

// Loads keys/helper.key, creating it (and helper.pub) when absent; never overwrites it.
export function loadOrCreateHelperKey(paths: HostPaths): Promise<HelperKey> {
  let p = cache.get(paths.helperKey);
  if (!p) {
    p = loadOrCreate(paths);
    cache.set(paths.helperKey, p);
    // A failed load is not cached: the operator may fix the file and ask again.
    p.catch(() => cache.delete(paths.helperKey));
  }
  return p;
}

async function loadOrCreate(paths: HostPaths): Promise<HelperKey> {
  await ensureDir(paths.varLib, 0o755);
  await ensureDir(paths.keysDir, 0o700);
  let privateKey = await readHelperKey(paths);
  if (!privateKey) {
    const kp = generateKeyPair();
    await writeFileAtomic(paths.helperKey, kp.privatePem, 0o600);
    log('created helper key keyId=%s file=%s', kp.keyId, paths.helperKey);
    privateKey = parsePrivateKey(kp.privatePem);
  }
  const publicKey = createPublicKey(privateKey);
  await ensurePublicFile(paths.helperPub, publicKey);
  return { privateKey, publicKey, keyId: keyIdOf(publicKey) };
}

// keys/helper.key as loadOrCreateHelperKey reads it (the trust rule, 0600, Ed25519), or null
// when there is none. Creates nothing: `agentctl install` checks it before any change.
export function readHelperKey(paths: HostPaths): Promise<KeyObject | null> {
  return readPrivateKey(paths.helperKey, trustScope(paths.keysDir, paths.root));
}

function refuse(file: string, why: string, cause?: unknown): never {
  throw new StewardError('STATE_INVALID', `${file}: ${why}; the helper key is refused (fix or remove it)`, cause === undefined ? {} : { cause });
}

// Why the trust rule (platform/trusted-file.ts): whoever could write the key file, or swap it
// through a folder above it, could sign receipts as this host.
async function readPrivateKey(file: string, trust: TrustScope): Promise<KeyObject | null> {
  let got;
  try {
    got = await readTrustedFile(file, trust, MAX_PEM);
  } catch (err) {
    refuse(file, (err as Error).message, err);
  }
  if (got.state === 'missing') return null;
  if (got.state === 'untrusted') refuse(file, `${got.why} (${trustRule(trust)})`);
  if ((got.mode & 0o077) !== 0) refuse(file, `mode ${got.mode.toString(8)} lets group or others at the key (want 600)`);
  try {
    return parsePrivateKey(got.bytes);
  } catch (err) {
    refuse(file, `not an Ed25519 private key in PEM (${(err as Error).message})`, err);
  }
}

// helper.pub is derived: rewritten whenever it is missing, unreadable, wrong or loose.
async function ensurePublicFile(file: string, publicKey: KeyObject): Promise<void> {
  const want = rawPublicKey(publicKey);
  try {
    const got = await readRegularFile(file, MAX_PEM);
    if (got && got.mode === 0o644 && rawPublicKey(parsePublicKey(got.bytes)).equals(want)) return;
  } catch {
    // Not a readable Ed25519 public key: replaced below.
  }
  log('writing helper.pub keyId=%s file=%s', keyIdOf(publicKey), file);
  await writeFileAtomic(file, publicKey.export({ format: 'pem', type: 'spki' }).toString(), 0o644);
}
