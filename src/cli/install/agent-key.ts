import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../../core/errors.js';
import { AGENT_APP } from '../../core/names.js';
import { trustedKeysFor, type HostPaths } from '../../core/paths.js';
import { keyIdOf, parsePublicKey } from '../../platform/keys.js';
import type { Step } from './install-layout.js';
import { checkRootFolder, writeIfChanged } from './root-files.js';

// Trusts the release public key `keyFile` (PEM SPKI, Ed25519) for steward-agent: it goes to
// /etc/steward/trusted-keys/steward-agent/<keyId>.pub, the folder the helper verifies every
// agent update against. Without a key file, reports whether any key is trusted there: with none,
// every agent update is refused (SIGNATURE_INVALID), which is safe but worth saying.
export async function trustAgentKey(paths: HostPaths, keyFile: string | undefined): Promise<{ action: Step['action']; detail: string }> {
  const dir = trustedKeysFor(paths, AGENT_APP);
  if (keyFile === undefined) {
    const have = (await fsp.readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith('.pub'));
    if (have.length > 0) return { action: 'unchanged', detail: `${dir}: ${have.join(', ')}` };
    return { action: 'skipped', detail: `no key is trusted for ${AGENT_APP} updates: pass --agent-key FILE (or put a *.pub in ${dir}); until then they are refused` };
  }
  let pem: Buffer;
  try {
    pem = await fsp.readFile(keyFile);
  } catch (err) {
    throw new StewardError('NOT_FOUND', `--agent-key ${keyFile}: ${(err as Error).message}`, { cause: err });
  }
  // Why: createPublicKey also accepts a private key, whose bytes must never land in a 0644 file.
  if (pem.includes('PRIVATE KEY')) {
    throw new StewardError('USAGE', `--agent-key ${keyFile} holds a private key; pass the public half (steward-control keys create prints both)`);
  }
  let keyId: string;
  let spki: Buffer;
  try {
    const key = parsePublicKey(pem);
    keyId = keyIdOf(key);
    spki = Buffer.from(key.export({ type: 'spki', format: 'pem' }) as string);
  } catch (err) {
    throw new StewardError('USAGE', `--agent-key ${keyFile} is not an Ed25519 public key (PEM): ${(err as Error).message}`, { cause: err });
  }
  await checkRootFolder(path.dirname(dir));
  await checkRootFolder(dir);
  const target = path.join(dir, `${keyId}.pub`);
  const action = await writeIfChanged(target, spki, 0o644);
  return { action, detail: `${target} (keyId ${keyId}) may sign ${AGENT_APP} releases` };
}
