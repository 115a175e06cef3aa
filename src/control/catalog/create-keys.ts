import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../../core/errors.js';
import { ensureDir, writeFileAtomic } from '../../platform/fs-atomic.js';
import { generateKeyPair } from '../../platform/keys.js';

// Writes a fresh Ed25519 release key pair as <dir>/<name>.key (0600) and <dir>/<name>.pub;
// refuses to overwrite either, so a signing key is never lost by a repeated command.
export async function createKeys(dir: string, name: string): Promise<{ privateKeyFile: string; publicKeyFile: string; keyId: string }> {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(name)) throw new StewardError('USAGE', `--name ${JSON.stringify(name)} is not a plain file name`);
  const privateKeyFile = path.join(dir, `${name}.key`);
  const publicKeyFile = path.join(dir, `${name}.pub`);
  for (const f of [privateKeyFile, publicKeyFile]) {
    const exists = await fsp.lstat(f).then(
      () => true,
      () => false,
    );
    if (exists) throw new StewardError('FORBIDDEN', `${f} exists; refusing to overwrite a key`);
  }
  // An existing folder keeps its mode; a missing one is made 0700.
  if (!(await fsp.stat(dir).catch(() => null))?.isDirectory()) await ensureDir(dir, 0o700);
  const kp = generateKeyPair();
  await writeFileAtomic(privateKeyFile, kp.privatePem, 0o600);
  await writeFileAtomic(publicKeyFile, kp.publicPem, 0o644);
  return { privateKeyFile, publicKeyFile, keyId: kp.keyId };
}
