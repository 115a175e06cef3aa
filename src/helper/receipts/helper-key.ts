import { createPublicKey, type KeyObject } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { StewardError } from '../../core/errors.js';
import type { HostPaths } from '../../core/paths.js';
import { generateKeyPair, keyIdOf, parsePrivateKey, parsePublicKey, rawPublicKey } from '../../platform/keys.js';
import { logger } from '../../platform/log.js';
import { ensureDir, readRegularFile, writeFileAtomic } from '../../platform/fs-atomic.js';

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
  await checkOwner(paths.keysDir);
  let privateKey = await readPrivateKey(paths.helperKey);
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

function refuse(file: string, why: string, cause?: unknown): never {
  throw new StewardError('STATE_INVALID', `${file}: ${why}; the helper key is refused (fix or remove it)`, cause === undefined ? {} : { cause });
}

// Why: as root, a key folder someone else owns would let them swap the key file.
async function checkOwner(dir: string): Promise<void> {
  const st = await fsp.lstat(dir);
  const uid = process.geteuid?.() ?? st.uid;
  if (st.uid !== uid) refuse(dir, `owned by uid ${st.uid}, not ${uid}`);
}

async function readPrivateKey(file: string): Promise<KeyObject | null> {
  let got;
  try {
    got = await readRegularFile(file, MAX_PEM);
  } catch (err) {
    refuse(file, (err as Error).message, err);
  }
  if (!got) return null;
  const uid = process.geteuid?.() ?? got.uid;
  if (got.uid !== uid) refuse(file, `owned by uid ${got.uid}, not ${uid}`);
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
