// `release add`: sign a manifest for a tarball and keep both (DESIGN §9).
import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { ARTIFACTS_PREFIX } from '../../core/control-api.js';
import { StewardError } from '../../core/errors.js';
import type { Envelope, ManifestPayload } from '../../core/release-schemas.js';
import { manifestPayloadSchema } from '../../core/release-schemas.js';
import { ensureDir, writeFileAtomic } from '../../platform/fs-atomic.js';
import { DOMAINS, keyIdOf, parsePrivateKey, signEnvelope } from '../../platform/keys.js';
import type { ControlStore } from '../store/store.js';
import { artifactPath } from './artifact-path.js';

export const DEFAULT_EXPIRES_DAYS = 30;
const DAY_MS = 86_400_000;

export interface AddReleaseInput {
  app: string;
  version: string;
  file: string;
  // The manifest url as given, or null to serve the tarball from `baseUrl`.
  url: string | null;
  baseUrl: string | null;
  privateKeyPem: string;
  expiresDays: number;
  // Where kept tarballs go (artifact-path.ts).
  artifactsDir: string;
}

export interface AddedRelease {
  app: string;
  version: string;
  manifest: Envelope;
  payload: ManifestPayload;
  keyId: string;
  artifactPath: string | null;
}

// sha512 SRI of bytes.
export function integrityOf(bytes: Buffer): string {
  return 'sha512-' + createHash('sha512').update(bytes).digest('base64');
}

// Signs and stores a release. Re-adding the same bytes re-signs it (a fresh expiry); different
// bytes under an existing app and version are refused: a version names one tarball forever.
export async function addRelease(store: ControlStore, input: AddReleaseInput): Promise<AddedRelease> {
  const { app, version } = input;
  const target = artifactPath(input.artifactsDir, app, version);
  let key;
  try {
    key = parsePrivateKey(input.privateKeyPem);
  } catch (err) {
    throw new StewardError('USAGE', `--key is not an Ed25519 private key (PEM): ${(err as Error).message}`, { cause: err });
  }
  let bytes: Buffer;
  try {
    bytes = await fsp.readFile(input.file);
  } catch (err) {
    throw new StewardError('NOT_FOUND', `cannot read the release tarball ${input.file}: ${(err as Error).message}`, { cause: err });
  }
  if (bytes.length === 0) throw new StewardError('USAGE', `${input.file} is empty`);
  const integrity = integrityOf(bytes);
  const { existing, now } = await store.read(async (tx) => ({ existing: await tx.releases.get(app, version), now: await tx.now() }));
  if (existing && existing.integrity !== integrity) {
    throw new StewardError('RELEASE_INVALID', `${app} ${version} is already in the catalog with other bytes (${existing.integrity.slice(0, 20)}...); publish a new version`);
  }
  const url = input.url ?? `${(input.baseUrl ?? '').replace(/\/+$/, '')}${ARTIFACTS_PREFIX}${app}/${version}.tgz`;
  const payload = manifestPayloadSchema.parse({ name: app, version, url, size: bytes.length, integrity, expires: now + input.expiresDays * DAY_MS });
  const manifest = signEnvelope(DOMAINS.manifest, payload, key);
  const keep = input.url === null;
  if (keep) {
    await ensureDir(path.dirname(path.dirname(target)), 0o755);
    await ensureDir(path.dirname(target), 0o755);
    await writeFileAtomic(target, bytes, 0o644);
  }
  await store.write(async (tx) => {
    const again = await tx.releases.get(app, version);
    if (again && again.integrity !== integrity) throw new StewardError('RELEASE_INVALID', `${app} ${version} was added with other bytes meanwhile`);
    await tx.releases.upsert({ app, version, manifest, integrity, size: bytes.length, expires: payload.expires, artifactPath: keep ? target : (again?.artifactPath ?? null), addedAt: again?.addedAt ?? now, keyId: keyIdOf(key) });
  });
  return { app, version, manifest, payload, keyId: keyIdOf(key), artifactPath: keep ? target : null };
}
