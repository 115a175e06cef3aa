// An update under TUF (docs/design.md §21): what the helper checks, in the place of the release
// key's signature, before anything is staged. The director's directive for this node, app,
// version and attempt, opened under the director keys of the trusted root; the manifest's
// payload bytes the target `<app>/<version>/manifest.json` of the app's delegation (length, sha256,
// sha512) under stored metadata that still holds (nothing fetched, nothing expired); the index
// it names the target `index.json`; and below the app's floor, the target `downgrade.json`, the
// bytes of the request's downgrade authorization, holding as docs/design.md §18 says. Each
// refusal is a StewardError with its code; the transaction makes its `refused` receipt.
import { createHash } from 'node:crypto';
import type { TargetFile } from '@tufjs/models';
import { allowDowngradeCommand, downgradePayloadSchema, MAX_DOWNGRADE_AHEAD_MS, MAX_DOWNGRADE_DAYS } from '../../core/downgrade-schema.js';
import { StewardError } from '../../core/errors.js';
import { mustParse } from '../../core/must-parse.js';
import type { HostPaths } from '../../core/paths.js';
import { manifestPayloadSchema, type Envelope, type ManifestPayload } from '../../core/release-schemas.js';
import { sameRelease } from '../../core/same-release.js';
import { SELF_APP } from '../../core/self-schemas.js';
import type { AppState } from '../../core/state-schemas.js';
import { delegatedRoleName, downgradeTargetPath, indexTargetPath, manifestTargetPath } from '../../core/trust/roles.js';
import { compareVersions } from '../../core/version.js';
import { readNodeId } from '../../host/node-id.js';
import { strictBase64 } from '../../platform/keys.js';
import { directorKeysOf, openDirective } from '../../platform/trust/directive.js';
import type { AuthorizedDowngrade } from '../stage/verify-downgrade.js';
import { storedRoot, storedTargets } from './tuf-client.js';

type FileIndexRef = NonNullable<ManifestPayload['index']>;

export interface TufUpdateRequest {
  app: string;
  version: string;
  attemptId: string;
  manifest?: Envelope | undefined;
  indexedManifest?: Envelope | undefined;
  directive?: Envelope | undefined;
  downgrade?: Envelope | undefined;
  // The agent could not fetch the newer metadata the control plane offered (schemas.ts).
  trustFetchFailed?: string | undefined;
}

export interface TufVerified {
  payload: ManifestPayload;
  index?: FileIndexRef;
  downgrade: AuthorizedDowngrade | null;
}

const hex = (alg: 'sha256' | 'sha512', b: Buffer) => createHash(alg).update(b).digest('hex');

// Whether `bytes` are exactly the target: its length and both of its hashes (steward's targets
// carry sha256 and sha512; one without either vouches for nothing here).
function isTarget(t: TargetFile, bytes: Buffer): boolean {
  const h = t.hashes as Record<string, string | undefined>;
  return t.length === bytes.length && h['sha256'] !== undefined && h['sha512'] !== undefined && h['sha256'] === hex('sha256', bytes) && h['sha512'] === hex('sha512', bytes);
}

function payloadBytes(e: Envelope, what: string): Buffer {
  const b = strictBase64(e.payload);
  if (!b) throw new StewardError('RELEASE_INVALID', `${what}: the payload is not strict base64`);
  return b;
}

// Refusals that metadata newer than the stored one might have lifted: the release is a target of
// a later app targets, the directive is signed by a rotated-in director, the stored metadata expired.
const BEHIND_CODES: ReadonlySet<string> = new Set(['TRUST_UNSIGNED', 'TRUST_EXPIRED', 'TRUST_NOT_DIRECTED']);

// `directed: false` for a `stage` (nothing is activated: no directive is asked for, and a
// version below the floor is left to the stage's own refusal). When the agent says it could not
// fetch the newer metadata the control plane offered (`trustFetchFailed`), a refusal of
// BEHIND_CODES is FETCH_FAILED instead, naming both: the node could not get what would decide,
// which a rollout counts as the node's trouble (its fetch-failure budget), not the release's.
// Nothing more is let through than without it.
export async function verifyTufUpdate(paths: HostPaths, req: TufUpdateRequest, state: Pick<AppState, 'highestActive'>, now: number, opts: { directed?: boolean } = {}): Promise<TufVerified> {
  try {
    return await verifyAgainstStored(paths, req, state, now, opts);
  } catch (err) {
    if (req.trustFetchFailed === undefined || !(err instanceof StewardError) || !BEHIND_CODES.has(err.code)) throw err;
    throw new StewardError('FETCH_FAILED', `${err.message} (${err.code}); the control plane offered newer TUF metadata than this host trusts, and the agent could not fetch it: ${req.trustFetchFailed}`);
  }
}

async function verifyAgainstStored(paths: HostPaths, req: TufUpdateRequest, state: Pick<AppState, 'highestActive'>, now: number, opts: { directed?: boolean }): Promise<TufVerified> {
  const directed = opts.directed !== false;
  const { app, version } = req;
  const what = `${app} ${version}`;
  const role = delegatedRoleName(app);
  const notDirected = (why: string): never => {
    throw new StewardError('TRUST_NOT_DIRECTED', `${what}: this host trusts a TUF root, so an update needs a directive of its director for this node, app, version and attempt; ${why}`);
  };

  // 1. The director's word for this node and attempt.
  const root = await storedRoot(paths);
  if (!root) throw new StewardError('TRUST_INVALID', `${what}: this host trusts no TUF root`);
  if (directed) {
    const nodeId = await readNodeId(paths);
    if (nodeId === null) notDirected('this host is not enrolled, so no directive is for it');
    if (!req.directive) notDirected('none came with the request');
    let keys;
    try {
      keys = directorKeysOf(root);
    } catch (err) {
      throw new StewardError('TRUST_INVALID', `${what}: the trusted root's director: ${(err as Error).message}`);
    }
    const d = openDirective(req.directive as Envelope, keys, { nodeId: nodeId as string, app, version, now });
    if (!d.ok) notDirected(`the directive is refused (${d.reason}): ${d.message}`);
    if (d.ok && d.directive.attemptId !== req.attemptId) notDirected(`the directive is for attempt ${d.directive.attemptId}, not ${req.attemptId}`);
  }

  // 2. The manifest, the index and the downgrade as the app's delegation signs them.
  if (!req.manifest) throw new StewardError('RELEASE_INVALID', `${what}: no manifest`);
  const manifestBytes = payloadBytes(req.manifest, `the manifest of ${what}`);
  let payload: ManifestPayload;
  try {
    payload = mustParse(manifestPayloadSchema, JSON.parse(manifestBytes.toString('utf8')), 'RELEASE_INVALID', `manifest for ${what}`);
  } catch (err) {
    if (err instanceof StewardError) throw err;
    throw new StewardError('RELEASE_INVALID', `manifest for ${what}: the payload is not JSON`);
  }
  if (payload.name !== app || payload.version !== version) throw new StewardError('RELEASE_INVALID', `manifest is for ${payload.name} ${payload.version}, not ${what}`);
  let index = payload.index;
  if (req.indexedManifest) {
    let indexed: ManifestPayload;
    try {
      indexed = mustParse(manifestPayloadSchema, JSON.parse(payloadBytes(req.indexedManifest, `the indexed manifest of ${what}`).toString('utf8')), 'RELEASE_INVALID', `the indexed manifest of ${what}`);
    } catch (err) {
      if (err instanceof StewardError) throw err;
      throw new StewardError('RELEASE_INVALID', `the indexed manifest of ${what}: the payload is not JSON`);
    }
    if (indexed.name !== app || indexed.version !== version || !sameRelease(payload, indexed)) {
      throw new StewardError('INTEGRITY_MISMATCH', `the indexed manifest of ${what} names other bytes than its manifest (url, size or integrity differ)`);
    }
    if (!indexed.index) throw new StewardError('RELEASE_INVALID', `the indexed manifest of ${what} names no file index`);
    index = indexed.index;
  }
  const below = state.highestActive;
  const downgrading = directed && app !== SELF_APP && below !== null && compareVersions(version, below) < 0;
  const paths_ = [manifestTargetPath(app, version), ...(index ? [indexTargetPath(app, version)] : []), ...(downgrading ? [downgradeTargetPath(app, version)] : [])];
  const targets = await storedTargets(paths, paths_);

  const manifestTarget = targets.get(manifestTargetPath(app, version));
  if (!manifestTarget) throw new StewardError('TRUST_UNSIGNED', `${what}: ${manifestTargetPath(app, version)} is not a target the ${role} delegation signs`);
  if (!isTarget(manifestTarget, manifestBytes)) {
    throw new StewardError('TRUST_UNSIGNED', `${what}: the manifest is not the target ${manifestTargetPath(app, version)} the ${role} delegation signs (its length or hashes differ)`);
  }
  if (payload.expires <= now) throw new StewardError('MANIFEST_EXPIRED', `manifest for ${what} expired at ${new Date(payload.expires).toISOString()}`);
  if (index) {
    const t = targets.get(indexTargetPath(app, version));
    const sha512 = index.integrity.startsWith('sha512-') ? Buffer.from(index.integrity.slice('sha512-'.length), 'base64').toString('hex') : null;
    const h = t?.hashes as Record<string, string | undefined> | undefined;
    if (!t || t.length !== index.size || sha512 === null || h?.['sha512'] !== sha512) {
      throw new StewardError('TRUST_UNSIGNED', `${what}: the file index the manifest names is not the target ${indexTargetPath(app, version)} the ${role} delegation signs`);
    }
  }

  // 3. Below the floor: the delegation's own downgrade authorization (docs/design.md §18).
  let downgrade: AuthorizedDowngrade | null = null;
  if (downgrading) {
    // Under TUF one release key is not enough (the CLI refuses fewer keys than the delegation's
    // threshold): the command names one --key per key of that threshold.
    const command = `${allowDowngradeCommand(app, version).replace(/ --key <[^>]*>$/, '')} --key <a key of ${role}> --key <another>...`;
    const refuse = (why: string): never => {
      throw new StewardError('DOWNGRADE_REFUSED', `${what} is below ${below}, the highest version that was active here, and ${why}: \`${command}\`, with a threshold of the ${role} delegation's keys, adds the target ${downgradeTargetPath(app, version)} to it; the control plane sends its bytes with the update`);
    };
    const t = targets.get(downgradeTargetPath(app, version));
    if (!t) refuse(`the ${role} delegation signs no ${downgradeTargetPath(app, version)}`);
    if (!req.downgrade) refuse('no downgrade authorization came with the request');
    const bytes = strictBase64((req.downgrade as Envelope).payload);
    if (!bytes || !isTarget(t as TargetFile, bytes)) refuse(`its downgrade authorization is not the target ${downgradeTargetPath(app, version)} (its length or hashes differ)`);
    let json: unknown;
    try {
      json = JSON.parse((bytes as Buffer).toString('utf8'));
    } catch {
      json = null;
    }
    const p = downgradePayloadSchema.safeParse(json);
    if (!p.success) return refuse('its downgrade authorization is not one {app, version, notAfter}');
    if (p.data.app !== app || p.data.version !== version) refuse(`its downgrade authorization is for ${p.data.app} ${p.data.version}`);
    if (p.data.notAfter <= now) refuse(`its downgrade authorization expired at ${new Date(p.data.notAfter).toISOString()} (this host's clock says ${new Date(now).toISOString()})`);
    if (p.data.notAfter > now + MAX_DOWNGRADE_AHEAD_MS) refuse(`its downgrade authorization holds until ${new Date(p.data.notAfter).toISOString()}, further ahead than the ${MAX_DOWNGRADE_DAYS} days any authorization is signed for`);
    downgrade = { keyId: role, by: `the target ${downgradeTargetPath(app, version)} of the ${role} delegation`, notAfter: p.data.notAfter, below: below as string };
  }
  return { payload, ...(index ? { index } : {}), downgrade };
}
