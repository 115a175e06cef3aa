// `release add` (docs/design.md §11, §12): a manifest signed where the release key is (the operator's
// machine through the admin API, or the server host's CLI), checked and stored with its bytes.
import { createHash, type KeyObject } from 'node:crypto';
import { ARTIFACTS_PREFIX } from '../../core/control-api.js';
import { StewardError } from '../../core/errors.js';
import type { Envelope, ManifestPayload } from '../../core/release-schemas.js';
import { manifestPayloadSchema } from '../../core/release-schemas.js';
import { sameRelease } from '../../core/same-release.js';
import { DOMAINS, keyIdOf, openEnvelope, parsePrivateKey, parsePublicKey, signEnvelope } from '../../platform/keys.js';
import { localActor, recordAudit, type Actor } from '../audit/record-audit.js';
import type { ControlStore, ReleaseRow } from '../store/store.js';
import { artifactPath } from './artifact-path.js';
import { checkReleaseMetrics } from './check-release-metrics.js';
import { indexOfTarball, keepIndexAndObjects } from './file-index-of.js';
import { makePatches, type MadePatches } from './make-patches.js';
import { copyIntoUploads, discardReleaseBytes, hashLocalFile, placeReleaseBytes, type ReleaseBytes } from './upload-file.js';

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
  // Who adds it (the audit log's operator); the local CLI's user unless told.
  actor?: Actor;
  // Sign and keep the release's file index (docs/design.md §20.2): a second manifest, the plain one
  // plus `index`, which the control plane sends only to agents that read it; hosts of this steward
  // or later then fetch only the files they lack. Only with `baseUrl`.
  index?: boolean;
}

export interface AddedRelease {
  app: string;
  version: string;
  manifest: Envelope;
  payload: ManifestPayload;
  // The same release's manifest signed with its file index, and the index it names (docs/design.md
  // §20.2); null when none was made (--url, --no-index).
  indexedManifest: Envelope | null;
  index: NonNullable<ManifestPayload['index']> | null;
  keyId: string;
  artifactPath: string | null;
  // What happened to the catalog: a new version, the same manifest re-signed with a fresh
  // expiry, or another key's manifest replaced (--resign; `replacedKeyId` signed it).
  change: 'added' | 'refreshed' | 'resigned';
  replacedKeyId: string | null;
  // For a release whose index the catalog keeps: the static patches made to it (§20.5).
  patches?: MadePatches;
}

// A signed manifest on its way to the catalog, with the public key that signed it.
export interface SignedRelease {
  app: string;
  version: string;
  manifest: Envelope;
  // The plain manifest plus the file index (docs/design.md §20.2), signed by the same key; only
  // with `keep`. Absent: none (a steward-control from before sends none).
  indexedManifest?: Envelope | null;
  // PEM SPKI of the signing key: the catalog checks its id is allowed for the app.
  publicKey: string;
  // Keep the bytes and serve them at /v1/artifacts/ (the manifest's url points there).
  keep: boolean;
  resign: boolean;
}

// sha512 SRI of bytes.
export function integrityOf(bytes: Buffer): string {
  return 'sha512-' + createHash('sha512').update(bytes).digest('base64');
}

// The private key of a PEM, or a USAGE error naming where it came from.
export function releaseKeyOf(pem: string, what = '--key'): KeyObject {
  try {
    return parsePrivateKey(pem);
  } catch (err) {
    throw new StewardError('USAGE', `${what} is not an Ed25519 private key (PEM): ${(err as Error).message}`, { cause: err });
  }
}

// Signs the manifest of `bytes` for app@version with `key`: `url` as given, or the kept
// tarball's under `baseUrl`; expiring `expiresDays` after `now`.
// With `index` (its integrity and size, file-index-of.ts), a second manifest is signed too: the
// same payload plus the release's file index beside the kept tarball (docs/design.md §20.2); only for
// a kept tarball. The plain manifest is exactly what it is without one, for hosts that do not
// read indexes.
export function signRelease(o: { app: string; version: string; bytes: Pick<ReleaseBytes, 'size' | 'integrity'>; url: string | null; baseUrl: string | null; key: KeyObject; expiresDays: number; now: number; resign: boolean; index?: { integrity: string; size: number } | null }): SignedRelease {
  const base = `${(o.baseUrl ?? '').replace(/\/+$/, '')}${ARTIFACTS_PREFIX}${o.app}/${o.version}`;
  const url = o.url ?? `${base}.tgz`;
  if (o.index && o.url !== null) throw new StewardError('USAGE', 'a file index (--index) is served beside a kept tarball: pass --base-url, not --url');
  const payload = manifestPayloadSchema.parse({ name: o.app, version: o.version, url, size: o.bytes.size, integrity: o.bytes.integrity, expires: o.now + o.expiresDays * DAY_MS });
  const indexed = o.index ? manifestPayloadSchema.parse({ ...payload, index: { url: `${base}.index.json`, integrity: o.index.integrity, size: o.index.size } }) : null;
  const publicKey = parsePublicKey(o.key.export({ format: 'pem', type: 'pkcs8' })).export({ format: 'pem', type: 'spki' }).toString();
  return {
    app: o.app,
    version: o.version,
    manifest: signEnvelope(DOMAINS.manifest, payload, o.key),
    ...(indexed ? { indexedManifest: signEnvelope(DOMAINS.manifest, indexed, o.key) } : {}),
    publicKey,
    keep: o.url === null,
    resign: o.resign,
  };
}

// Signs and stores a release in one go, on the host that holds the key (the local CLI, tests).
export async function addRelease(store: ControlStore, input: AddReleaseInput): Promise<AddedRelease> {
  const key = releaseKeyOf(input.privateKeyPem);
  const bytes = await hashLocalFile(input.file);
  const now = await store.read((tx) => tx.now());
  const index = input.index ? await indexOfTarball(input.file) : null;
  const signed = signRelease({ ...input, bytes, key, now, resign: input.resign === true, index });
  return publishRelease(store, input.actor ?? localActor(), signed, signed.keep ? await copyIntoUploads(input.artifactsDir, bytes) : bytes, input.artifactsDir);
}

// Stores a signed release with its bytes (docs/design.md §11's catalog rules, §12's upload): the
// signature must verify under the given public key, whose id must be allowed for the app (the
// first release of an app allows its key; `keys allow` others), else FORBIDDEN; the manifest
// must name the app and version, and the bytes' size and integrity. A version once added is
// immutable: the same bytes and key refresh its expiry; other bytes are refused RELEASE_EXISTS;
// another key needs `resign`. Owned bytes are placed or removed, whatever happens.
export async function publishRelease(store: ControlStore, actor: Actor, r: SignedRelease, bytes: ReleaseBytes, artifactsDir: string): Promise<AddedRelease> {
  try {
    const { app, version } = r;
    const payload = checkSignedRelease(r, bytes);
    const indexed = r.indexedManifest ? checkIndexedManifest(r, r.indexedManifest, payload) : null;
    // The index the catalog keeps: the indexed manifest's, or (a steward-control CLI from before
    // §20.2 with --index) the plain manifest's own.
    const index = indexed ?? payload.index ?? null;
    // A metrics URL off loopback is refused here, before the catalog (docs/design.md §19).
    await checkReleaseMetrics(bytes.file, app, version);
    const keyId = r.manifest.keyId;
    const target = artifactPath(artifactsDir, app, version);
    const change = await store.write(async (tx) => {
      const now = await tx.now();
      if (payload.expires <= now) throw new StewardError('MANIFEST_EXPIRED', `the manifest of ${app} ${version} expired at ${new Date(payload.expires).toISOString()}; sign a fresh one`);
      const existing = await tx.releases.get(app, version);
      const keys = (await tx.releases.keys(app)).map((k) => k.keyId);
      checkCatalogRules(app, version, payload.integrity, keyId, existing, keys, r.resign);
      if (keys.length === 0) await tx.releases.allowKey(app, keyId, now);
      // Why inside the transaction: it holds the store's write lock, so no other writer can add
      // this version with other bytes between the check above and the file's replacement.
      if (index && !r.keep) throw new StewardError('USAGE', `the manifest of ${app} ${version} names a file index, which is served beside a kept tarball only`);
      // The index and the objects first: a release in the catalog whose index a node cannot fetch
      // would send every node of it to the tarball.
      if (index && r.keep) await keepIndexAndObjects(artifactsDir, app, version, bytes.file, index);
      if (r.keep) await placeReleaseBytes(bytes, target);
      // Both manifests in one row, replaced together: a refresh or --resign never leaves an
      // indexed manifest of another key or expiry beside the plain one (none, with --no-index).
      await tx.releases.upsert({ app, version, manifest: r.manifest, integrity: payload.integrity, size: payload.size, expires: payload.expires, artifactPath: r.keep ? target : (existing?.artifactPath ?? null), addedAt: existing?.addedAt ?? now, keyId, indexedManifest: r.indexedManifest ?? null });
      const made = { change: !existing ? ('added' as const) : existing.keyId === keyId ? ('refreshed' as const) : ('resigned' as const), replacedKeyId: existing && existing.keyId !== keyId ? existing.keyId : null };
      await recordAudit(tx, actor, 'release.add', `${app}@${version}`, { keyId, integrity: payload.integrity, size: payload.size, expires: payload.expires, url: payload.url, kept: r.keep, indexed: r.indexedManifest ? true : false, ...made });
      return made;
    });
    // Why after the commit: a patch is derived from kept files, and one that fails to be made
    // only sends hosts to the pack; it never fails the release.
    const patches = index && r.keep ? await makePatches(artifactsDir, app, version).catch((err: unknown) => ({ from: [], notes: [`no patches: ${(err as Error).message}`] })) : undefined;
    return { app, version, manifest: r.manifest, payload, indexedManifest: r.indexedManifest ?? null, index, keyId, artifactPath: r.keep ? target : null, ...change, ...(patches ? { patches } : {}) };
  } finally {
    await discardReleaseBytes(bytes);
  }
}

// The manifest's payload once its signature, names and bytes check out.
function checkSignedRelease(r: SignedRelease, bytes: ReleaseBytes): ManifestPayload {
  const { app, version } = r;
  let key: KeyObject;
  try {
    key = parsePublicKey(r.publicKey);
  } catch (err) {
    throw new StewardError('USAGE', `the release's public key is not an Ed25519 key (PEM): ${(err as Error).message}`, { cause: err });
  }
  const keyId = keyIdOf(key);
  if (r.manifest.keyId !== keyId) throw new StewardError('SIGNATURE_INVALID', `the manifest of ${app} ${version} names key ${r.manifest.keyId}, not the key ${keyId} sent with it`);
  const opened = openEnvelope(r.manifest, DOMAINS.manifest, new Map([[keyId, key]]));
  if (!opened.ok) throw new StewardError('SIGNATURE_INVALID', `the manifest of ${app} ${version} does not verify under key ${keyId} (${opened.reason})`);
  const parsed = manifestPayloadSchema.safeParse(opened.payload);
  if (!parsed.success) throw new StewardError('RELEASE_INVALID', `the manifest of ${app} ${version} is not a release manifest`);
  const payload = parsed.data;
  if (payload.name !== app || payload.version !== version) throw new StewardError('RELEASE_INVALID', `the manifest names ${payload.name} ${payload.version}, not ${app} ${version}`);
  if (payload.size !== bytes.size || payload.integrity !== bytes.integrity) {
    throw new StewardError('INTEGRITY_MISMATCH', `the bytes sent for ${app} ${version} (${bytes.size} bytes) are not the ones its manifest signs (${payload.size} bytes)`);
  }
  return payload;
}

// The indexed manifest's `index` once it checks out as the plain manifest plus an index: signed
// by the same key, naming the same app, version, url, size, integrity and expiry
// (docs/design.md §20.2), for a kept tarball. Hosts check it all again; the catalog refuses to
// keep what they would refuse.
function checkIndexedManifest(r: SignedRelease, indexed: Envelope, plain: ManifestPayload): NonNullable<ManifestPayload['index']> {
  const { app, version } = r;
  if (!r.keep) throw new StewardError('USAGE', `the indexed manifest of ${app} ${version} names a file index, which is served beside a kept tarball only: pass --base-url, not --url`);
  if (plain.index) throw new StewardError('RELEASE_INVALID', `the manifest of ${app} ${version} names a file index itself; send it alone, or a plain manifest with an indexed one`);
  if (indexed.keyId !== r.manifest.keyId) throw new StewardError('SIGNATURE_INVALID', `the indexed manifest of ${app} ${version} names key ${indexed.keyId}, not ${r.manifest.keyId}, which signed the manifest`);
  const key = parsePublicKey(r.publicKey);
  const opened = openEnvelope(indexed, DOMAINS.manifest, new Map([[indexed.keyId, key]]));
  if (!opened.ok) throw new StewardError('SIGNATURE_INVALID', `the indexed manifest of ${app} ${version} does not verify under key ${indexed.keyId} (${opened.reason})`);
  const parsed = manifestPayloadSchema.safeParse(opened.payload);
  if (!parsed.success || !parsed.data.index) throw new StewardError('RELEASE_INVALID', `the indexed manifest of ${app} ${version} is not a release manifest with a file index`);
  if (!sameRelease(plain, parsed.data) || parsed.data.expires !== plain.expires) {
    throw new StewardError('RELEASE_INVALID', `the indexed manifest of ${app} ${version} names another release than its manifest (app, version, url, size, integrity and expiry must be the same)`);
  }
  return parsed.data.index;
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
