// `release allow-downgrade` (docs/design.md §18): a downgrade authorization signed where the release
// key is (the operator's machine through the admin API, or the server host's CLI), checked against
// the catalog and stored, to go with the desired entries of that app and version.
import type { KeyObject } from 'node:crypto';
import { downgradePayloadSchema, MAX_DOWNGRADE_AHEAD_MS, type DowngradePayload } from '../../core/downgrade-schema.js';
import { StewardError } from '../../core/errors.js';
import { formatIssues } from '../../core/format-issues.js';
import type { Envelope } from '../../core/release-schemas.js';
import { DOMAINS, keyIdOf, openEnvelope, parsePublicKey, signEnvelope } from '../../platform/keys.js';
import { recordAudit, type Actor } from '../audit/record-audit.js';
import type { ControlStore } from '../store/store.js';

const DAY_MS = 86_400_000;

// A signed downgrade authorization on its way to the store, with the public key that signed it.
export interface SignedDowngrade {
  app: string;
  version: string;
  authorization: Envelope;
  // PEM SPKI of the signing key: the catalog checks that its id is allowed for the app.
  publicKey: string;
}

export interface AllowedDowngrade {
  app: string;
  version: string;
  keyId: string;
  notAfter: number;
  // Whether it replaced an authorization made before for the same version.
  replaced: boolean;
  authorization: Envelope;
}

// Signs {app, version, notAfter} under steward-downgrade-v1 with the release key `key`,
// `expiresDays` after `now` (the signing machine's clock).
export function signDowngrade(o: { app: string; version: string; key: KeyObject; expiresDays: number; now: number }): SignedDowngrade {
  const parsed = downgradePayloadSchema.safeParse({ app: o.app, version: o.version, notAfter: o.now + o.expiresDays * DAY_MS });
  if (!parsed.success) throw new StewardError('USAGE', `cannot authorize ${JSON.stringify(o.app)} ${JSON.stringify(o.version)}: ${formatIssues(parsed.error.issues)}`);
  const payload: DowngradePayload = parsed.data;
  const publicKey = parsePublicKey(o.key.export({ format: 'pem', type: 'pkcs8' })).export({ format: 'pem', type: 'spki' }).toString();
  return { app: o.app, version: o.version, authorization: signEnvelope(DOMAINS.downgrade, payload, o.key), publicKey };
}

// Stores a downgrade authorization, audited in the same transaction: its signature must verify
// under the given public key; the app must be in the catalog (NOT_FOUND), and the version too
// (NOT_FOUND: hosts only ever go back to a version the catalog can send); the key must be one
// the app allows to sign its releases (FORBIDDEN); its notAfter must lie ahead of the store's
// clock and no further than an authorization is ever signed for (USAGE). One per app and version:
// a new one replaces the last (a fresh expiry, another key).
export async function allowDowngrade(store: ControlStore, actor: Actor, d: SignedDowngrade): Promise<AllowedDowngrade> {
  const { app, version } = d;
  const payload = checkSignedDowngrade(d);
  const keyId = d.authorization.keyId;
  return store.write(async (tx) => {
    const now = await tx.now();
    const allowed = (await tx.releases.keys(app)).map((k) => k.keyId);
    const releases = await tx.releases.list(app);
    if (releases.length === 0 && allowed.length === 0) throw new StewardError('NOT_FOUND', `no app ${app} in the catalog (\`steward-control release list\` names the apps)`);
    if (!(await tx.releases.get(app, version))) {
      throw new StewardError('NOT_FOUND', `${app} ${version} is not in the catalog (it has ${releases.map((r) => r.version).join(', ') || 'no release'}); hosts go back only to a version the catalog sends: \`steward-control release add ${app} ${version} ...\` first`);
    }
    if (!allowed.includes(keyId)) {
      throw new StewardError('FORBIDDEN', `key ${keyId} is not a release key of ${app} (allowed: ${allowed.join(', ') || 'none'}); a downgrade authorization is signed with a key that signs ${app}'s releases`);
    }
    if (payload.notAfter <= now) throw new StewardError('USAGE', `the downgrade authorization of ${app} ${version} expired at ${new Date(payload.notAfter).toISOString()} (the control plane's clock says ${new Date(now).toISOString()}); sign a fresh one`);
    if (payload.notAfter > now + MAX_DOWNGRADE_AHEAD_MS) {
      throw new StewardError('USAGE', `the downgrade authorization of ${app} ${version} holds until ${new Date(payload.notAfter).toISOString()}, further ahead than hosts accept (30 days); check the signing machine's clock`);
    }
    const before = await tx.releases.downgrade(app, version);
    await tx.releases.putDowngrade({ app, version, keyId, notAfter: payload.notAfter, authorization: d.authorization, addedAt: now });
    await recordAudit(tx, actor, 'release.allow-downgrade', `${app}@${version}`, { keyId, notAfter: payload.notAfter, ...(before ? { replacedKeyId: before.keyId, replacedNotAfter: before.notAfter } : {}) });
    return { app, version, keyId, notAfter: payload.notAfter, replaced: before !== null, authorization: d.authorization };
  });
}

// The authorization's payload once its signature and names check out.
function checkSignedDowngrade(d: SignedDowngrade): DowngradePayload {
  const { app, version } = d;
  let key: KeyObject;
  try {
    key = parsePublicKey(d.publicKey);
  } catch (err) {
    throw new StewardError('USAGE', `the downgrade authorization's public key is not an Ed25519 key (PEM): ${(err as Error).message}`, { cause: err });
  }
  const keyId = keyIdOf(key);
  if (d.authorization.keyId !== keyId) throw new StewardError('SIGNATURE_INVALID', `the downgrade authorization of ${app} ${version} names key ${d.authorization.keyId}, not the key ${keyId} sent with it`);
  const opened = openEnvelope(d.authorization, DOMAINS.downgrade, new Map([[keyId, key]]));
  if (!opened.ok) throw new StewardError('SIGNATURE_INVALID', `the downgrade authorization of ${app} ${version} does not verify under ${DOMAINS.downgrade} with key ${keyId} (${opened.reason})`);
  const parsed = downgradePayloadSchema.safeParse(opened.payload);
  if (!parsed.success) throw new StewardError('USAGE', `the downgrade authorization of ${app} ${version} is not {app, version, notAfter}`);
  if (parsed.data.app !== app || parsed.data.version !== version) throw new StewardError('USAGE', `the downgrade authorization names ${parsed.data.app} ${parsed.data.version}, not ${app} ${version}`);
  return parsed.data;
}
