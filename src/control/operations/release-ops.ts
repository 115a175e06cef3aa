// `release add|list|remove|allow-downgrade` and `keys list|allow` (docs/design.md §11): the signed catalog and the keys
// each app allows.
import * as z from '../../core/zod-mini.js';
import { StewardError } from '../../core/errors.js';
import { envelopeSchema, type Envelope, type ManifestPayload } from '../../core/release-schemas.js';
import { keyIdOf, parsePublicKey } from '../../platform/keys.js';
import { publishRelease, type AddedRelease } from '../catalog/add-release.js';
import { allowDowngrade, type AllowedDowngrade } from '../catalog/allow-downgrade.js';
import { removeRelease } from '../catalog/remove-release.js';
import { discardReleaseBytes } from '../catalog/upload-file.js';
import { recordAudit } from '../audit/record-audit.js';
import { checkNames } from './check-names.js';
import { indexedManifestOf } from '../rollouts/indexed-manifest.js';
import { flag, toggle, word } from './inputs.js';
import type { Operation } from './operation.js';

// `release list` flags a manifest that expires within this: re-sign it before a rollout needs it.
const EXPIRES_SOON_MS = 7 * 86_400_000;

const pem = z.string().check(z.minLength(1), z.maxLength(4096));

export const releaseAdd: Operation<{ app: string; version: string; manifest: Envelope; indexedManifest?: Envelope; publicKey: string; keep: boolean; resign?: boolean }, AddedRelease> = {
  command: 'release add',
  action: 'release.add',
  role: 'admin',
  upload: true,
  // `indexedManifest` (docs/design.md §20.2): optional, so that a CLI from before it is served as before.
  input: z.strictObject({ app: word, version: word, manifest: envelopeSchema, indexedManifest: z.optional(envelopeSchema), publicKey: pem, keep: z.boolean(), resign: toggle }),
  async run(ctx, i, upload) {
    if (!upload) throw new StewardError('USAGE', 'release add: the tarball must follow the manifest');
    try {
      checkNames(i.app, i.version);
    } catch (err) {
      await discardReleaseBytes(upload);
      throw err;
    }
    const r = await publishRelease(ctx.store, ctx.actor, { ...i, resign: i.resign === true }, upload, ctx.artifactsDir);
    // In the order `release add --json` has always printed, then the indexed manifest and its
    // index, and `patches` (§20.5) for an indexed release.
    return { app: r.app, version: r.version, keyId: r.keyId, change: r.change, replacedKeyId: r.replacedKeyId, payload: r.payload, manifest: r.manifest, artifactPath: r.artifactPath, indexedManifest: r.indexedManifest, index: r.index, ...(r.patches ? { patches: r.patches } : {}) };
  },
};

export const releaseAllowDowngrade: Operation<{ app: string; version: string; authorization: Envelope; publicKey: string }, AllowedDowngrade> = {
  command: 'release allow-downgrade',
  action: 'release.allow-downgrade',
  role: 'admin',
  input: z.strictObject({ app: word, version: word, authorization: envelopeSchema, publicKey: pem }),
  async run(ctx, i) {
    checkNames(i.app, i.version);
    return allowDowngrade(ctx.store, ctx.actor, i);
  },
};

export interface ReleaseView {
  app: string;
  version: string;
  url: string;
  size: number;
  integrity: string;
  expires: number;
  expired: boolean;
  expiresSoon: boolean;
  keyId: string;
  kept: boolean;
  addedAt: number;
  manifest: Envelope;
  // The downgrade authorization stored for this version (docs/design.md §18), or null.
  downgrade: { keyId: string; notAfter: number; expired: boolean } | null;
  // The file index hosts that read indexes stage from (docs/design.md §20.2): the one of the
  // indexed manifest the control plane sends, or of a plain manifest signed with one; else null.
  index: { url: string; integrity: string; size: number } | null;
  // The indexed manifest the control plane sends to agents that read it, or null.
  indexedManifest: Envelope | null;
}

export const releaseList: Operation<{ app?: string }, { releases: ReleaseView[] }> = {
  command: 'release list',
  action: null,
  role: 'viewer',
  input: z.strictObject({ app: flag }),
  async run(ctx, { app }) {
    if (app) checkNames(app);
    const { rows, downgrades, now } = await ctx.store.read(async (tx) => ({ rows: await tx.releases.list(app), downgrades: await tx.releases.downgrades(app), now: await tx.now() }));
    const downgradeOf = new Map(downgrades.map((d) => [`${d.app}@${d.version}`, { keyId: d.keyId, notAfter: d.notAfter, expired: d.notAfter <= now }]));
    return {
      releases: rows.map((r) => {
        const payload = JSON.parse(Buffer.from(r.manifest.payload, 'base64').toString('utf8')) as ManifestPayload;
        const expired = r.expires <= now;
        const indexedManifest = indexedManifestOf(r);
        const indexed = indexedManifest ? (JSON.parse(Buffer.from(indexedManifest.payload, 'base64').toString('utf8')) as ManifestPayload) : payload;
        const index = indexed.index ? { url: indexed.index.url, integrity: indexed.index.integrity, size: indexed.index.size } : null;
        return { app: r.app, version: r.version, url: payload.url, size: r.size, integrity: r.integrity, expires: r.expires, expired, expiresSoon: !expired && r.expires <= now + EXPIRES_SOON_MS, keyId: r.manifest.keyId, kept: r.artifactPath !== null, addedAt: r.addedAt, manifest: r.manifest, downgrade: downgradeOf.get(`${r.app}@${r.version}`) ?? null, index, indexedManifest };
      }),
    };
  },
};

export const releaseRemove: Operation<{ app: string; version: string }, { removed: { app: string; version: string }; tarballRemoved: boolean }> = {
  command: 'release remove',
  action: 'release.remove',
  role: 'admin',
  input: z.strictObject({ app: word, version: word }),
  async run(ctx, { app, version }) {
    checkNames(app, version);
    const r = await removeRelease(ctx.store, ctx.artifactsDir, app, version, ctx.actor);
    return { removed: { app: r.app, version: r.version }, tarballRemoved: r.artifactPath !== null };
  },
};

export const keysList: Operation<{ app?: string }, { keys: Array<{ app: string; keyId: string; addedAt: number; releases: string[] }> }> = {
  command: 'keys list',
  action: null,
  role: 'viewer',
  input: z.strictObject({ app: flag }),
  async run(ctx, { app }) {
    if (app) checkNames(app);
    const keys = await ctx.store.read(async (tx) => {
      const releases = await tx.releases.list(app);
      return (await tx.releases.keys(app)).map((k) => ({ ...k, releases: releases.filter((r) => r.app === k.app && r.keyId === k.keyId).map((r) => r.version) }));
    });
    return { keys };
  },
};

export const keysAllow: Operation<{ app: string; publicKey: string }, { app: string; keyId: string }> = {
  command: 'keys allow',
  action: 'keys.allow',
  role: 'admin',
  input: z.strictObject({ app: word, publicKey: pem }),
  async run(ctx, { app, publicKey }) {
    checkNames(app);
    let keyId: string;
    try {
      keyId = keyIdOf(parsePublicKey(publicKey));
    } catch (err) {
      throw new StewardError('USAGE', `the key to allow for ${app} is not an Ed25519 key (PEM): ${(err as Error).message}`, { cause: err });
    }
    await ctx.store.write(async (tx) => {
      await tx.releases.allowKey(app, keyId, await tx.now());
      await recordAudit(tx, ctx.actor, 'keys.allow', app, { keyId });
    });
    return { app, keyId };
  },
};
