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
import type { ControlStore, ReleaseRow } from '../store/store.js';
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
  // Replace the manifest of an existing version signed by another (allowed) key.
  resign?: boolean;
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
  // What happened to the catalog: a new version, the same manifest re-signed with a fresh
  // expiry, or another key's manifest replaced (--resign; `replacedKeyId` signed it).
  change: 'added' | 'refreshed' | 'resigned';
  replacedKeyId: string | null;
}

// sha512 SRI of bytes.
export function integrityOf(bytes: Buffer): string {
  return 'sha512-' + createHash('sha512').update(bytes).digest('base64');
}

// Signs and stores a release (DESIGN §11's catalog rules). A version once added is immutable:
// the same bytes and key refresh its expiry; other bytes are refused RELEASE_EXISTS; another
// key needs `resign`. Only the key ids allowed for the app may sign it (the first release of an
// app allows its key; `keys allow` others); any other is refused FORBIDDEN.
export async function addRelease(store: ControlStore, input: AddReleaseInput): Promise<AddedRelease> {
  const { app, version } = input;
  const target = artifactPath(input.artifactsDir, app, version);
  let key;
  try {
    key = parsePrivateKey(input.privateKeyPem);
  } catch (err) {
    throw new StewardError('USAGE', `--key is not an Ed25519 private key (PEM): ${(err as Error).message}`, { cause: err });
  }
  const keyId = keyIdOf(key);
  let bytes: Buffer;
  try {
    bytes = await fsp.readFile(input.file);
  } catch (err) {
    throw new StewardError('NOT_FOUND', `cannot read the release tarball ${input.file}: ${(err as Error).message}`, { cause: err });
  }
  if (bytes.length === 0) throw new StewardError('USAGE', `${input.file} is empty`);
  const integrity = integrityOf(bytes);
  const { existing, allowed, now } = await store.read(async (tx) => ({ existing: await tx.releases.get(app, version), allowed: await tx.releases.keys(app), now: await tx.now() }));
  checkCatalogRules(app, version, integrity, keyId, existing, allowed.map((k) => k.keyId), input.resign === true);
  const url = input.url ?? `${(input.baseUrl ?? '').replace(/\/+$/, '')}${ARTIFACTS_PREFIX}${app}/${version}.tgz`;
  const payload = manifestPayloadSchema.parse({ name: app, version, url, size: bytes.length, integrity, expires: now + input.expiresDays * DAY_MS });
  const manifest = signEnvelope(DOMAINS.manifest, payload, key);
  const keep = input.url === null;
  if (keep) {
    // Private, as the database beside them: steward-control serves them itself.
    await ensureDir(path.dirname(path.dirname(target)), 0o700);
    await ensureDir(path.dirname(target), 0o700);
    await writeFileAtomic(target, bytes, 0o600);
  }
  const change = await store.write(async (tx) => {
    // Again inside the write: another process may have added this version meanwhile.
    const again = await tx.releases.get(app, version);
    const keys = (await tx.releases.keys(app)).map((k) => k.keyId);
    checkCatalogRules(app, version, integrity, keyId, again, keys, input.resign === true);
    if (keys.length === 0) await tx.releases.allowKey(app, keyId, now);
    await tx.releases.upsert({ app, version, manifest, integrity, size: bytes.length, expires: payload.expires, artifactPath: keep ? target : (again?.artifactPath ?? null), addedAt: again?.addedAt ?? now, keyId });
    return { change: !again ? ('added' as const) : again.keyId === keyId ? ('refreshed' as const) : ('resigned' as const), replacedKeyId: again && again.keyId !== keyId ? again.keyId : null };
  });
  return { app, version, manifest, payload, keyId, artifactPath: keep ? target : null, ...change };
}

function checkCatalogRules(app: string, version: string, integrity: string, keyId: string, existing: ReleaseRow | null, allowed: string[], resign: boolean): void {
  if (allowed.length > 0 && !allowed.includes(keyId)) {
    throw new StewardError('FORBIDDEN', `key ${keyId} may not sign ${app} (allowed: ${allowed.join(', ')}); \`steward-control keys allow ${app} --key <its .pub>\` allows another`);
  }
  if (!existing) return;
  if (existing.integrity !== integrity) {
    throw new StewardError('RELEASE_EXISTS', `${app} ${version} is already in the catalog with other bytes (${existing.integrity.slice(0, 20)}...); a version is never replaced: publish a new version`);
  }
  if (existing.keyId !== keyId && !resign) {
    throw new StewardError('RELEASE_EXISTS', `${app} ${version} is in the catalog signed by key ${existing.keyId}; pass --resign to replace its manifest with one signed by ${keyId}`);
  }
}
