// The backup key (docs/control-plane.md, "The backup key"): an Ed25519 key pair made with
// `steward-control keys create --name backup`, kept with the control plane's configuration and
// apart from the backups. `backup --key` signs each backup with its private half; `restore --key`
// takes the public half (or the private one) and refuses any file that key did not sign, so
// whoever can write where backups are kept cannot make one that restores.
import { readFileSync } from 'node:fs';
import type { KeyObject } from 'node:crypto';
import { StewardError } from '../../core/errors.js';
import { keyIdOf, parsePrivateKey, parsePublicKey } from '../../platform/keys.js';

export interface BackupKey {
  file: string;
  key: KeyObject;
  keyId: string;
}

function readKeyFile(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new StewardError('NOT_FOUND', `cannot read the backup key ${file}: ${(err as Error).message}`, { cause: err });
  }
}

// The private key that signs backups.
export function readBackupSigningKey(file: string): BackupKey {
  const pem = readKeyFile(file);
  let key: KeyObject;
  try {
    key = parsePrivateKey(pem);
  } catch (err) {
    throw new StewardError('USAGE', `${file} is not an Ed25519 private key (PEM): backup signs with the backup key's private half (\`steward-control keys create --out DIR --name backup\` makes one): ${(err as Error).message}`, { cause: err });
  }
  return { file, key, keyId: keyIdOf(key) };
}

// The public key a restore checks the signature with, from a file holding the public or the
// private half.
export function readBackupVerifyKey(file: string): BackupKey {
  const pem = readKeyFile(file);
  let key: KeyObject;
  try {
    key = parsePublicKey(pem);
  } catch (err) {
    throw new StewardError('USAGE', `${file} is not an Ed25519 key (PEM): restore checks a backup with the backup key that signed it (its .pub or .key file): ${(err as Error).message}`, { cause: err });
  }
  return { file, key, keyId: keyIdOf(key) };
}
