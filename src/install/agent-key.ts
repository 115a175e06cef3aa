import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../core/errors.js';
import { AGENT_APP } from '../core/names.js';
import { trustedKeysFor, type HostPaths } from '../core/paths.js';
import { keyIdOf, parsePublicKey } from '../platform/keys.js';
import type { Step } from './install-layout.js';
import { checkRootFolder, writeIfChanged } from './root-files.js';

// An --agent-key file that passed readAgentKey: the key as SPKI PEM, and where it came from.
export interface AgentKey {
  file: string;
  keyId: string;
  spki: Buffer;
}

const MAX_KEY_BYTES = 16 * 1024;

// Reads and checks the release public key `keyFile` (PEM, Ed25519) install is asked to trust,
// before install changes anything. A private key is refused and its bytes go nowhere.
export async function readAgentKey(keyFile: string): Promise<AgentKey> {
  let pem: Buffer;
  try {
    const st = await fsp.stat(keyFile);
    if (!st.isFile()) throw new Error('not a regular file');
    if (st.size > MAX_KEY_BYTES) throw new Error(`larger than ${MAX_KEY_BYTES} bytes, not a key`);
    pem = await fsp.readFile(keyFile);
  } catch (err) {
    throw new StewardError('NOT_FOUND', `--agent-key ${keyFile}: ${(err as Error).message}`, { cause: err });
  }
  // Why: createPublicKey also accepts a private key, whose bytes must never land in a 0644 file.
  if (pem.includes('PRIVATE KEY')) {
    throw new StewardError('USAGE', `--agent-key ${keyFile} holds a private key; pass the public half (steward-control keys create prints both)`);
  }
  try {
    const key = parsePublicKey(pem);
    return { file: keyFile, keyId: keyIdOf(key), spki: Buffer.from(key.export({ type: 'spki', format: 'pem' }) as string) };
  } catch (err) {
    throw new StewardError('USAGE', `--agent-key ${keyFile} is not an Ed25519 public key (PEM): ${(err as Error).message}`, { cause: err });
  }
}

// Trusts `key` (from readAgentKey) for steward-agent: it goes to
// /etc/steward/trusted-keys/steward-agent/<keyId>.pub, the folder the helper verifies every
// agent update against. Without a key, reports whether any key is trusted there: with none,
// every agent update is refused (SIGNATURE_INVALID), which is safe but worth saying.
export async function trustAgentKey(paths: HostPaths, key: AgentKey | null): Promise<{ action: Step['action']; detail: string }> {
  const dir = trustedKeysFor(paths, AGENT_APP);
  if (key === null) {
    const have = (await fsp.readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith('.pub'));
    if (have.length > 0) return { action: 'unchanged', detail: `${dir}: ${have.join(', ')}` };
    return { action: 'skipped', detail: `no key is trusted for ${AGENT_APP} updates: pass --agent-key FILE (or put a *.pub in ${dir}); until then they are refused` };
  }
  await checkRootFolder(path.dirname(dir));
  await checkRootFolder(dir);
  const target = path.join(dir, `${key.keyId}.pub`);
  const action = await writeIfChanged(target, key.spki, 0o644);
  return { action, detail: `${target} (keyId ${key.keyId}) may sign ${AGENT_APP} releases` };
}
