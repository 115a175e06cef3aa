// `release add` and `release allow-downgrade` under TUF (docs/design.md §21.1, §21.2): when the
// server keeps a TUF repository and delegates the app, the app's next delegated targets are
// built here with the release's targets, signed here with a threshold of the delegation's keys
// (repeated --key), and uploaded with `PUT /v1/admin/trust/apps/{app}`. What cannot be done is
// refused before anything is uploaded. Without a repository (or through --db, where the server
// side of trust is not reached), a single --key and the commands as before.
import { createHash, type KeyObject } from 'node:crypto';
import type { Key, Metadata, Targets } from '@tufjs/models';
import type { Command } from 'commander';
import { StewardError } from '../../../core/errors.js';
import { addReleaseTargets, metadataBytes, newAppTargets, type ReleaseTargets } from '../../../core/trust/build.js';
import { APP_DELEGATION_LIFETIME_MS } from '../../../core/trust/roles.js';
import { signatureCount, signMetadata, tufKeyIdOf } from '../../../platform/trust/tuf-keys.js';
import { targetOf } from '../context.js';
import { needMetadata, TrustApi } from './api.js';
import { checkDelegationKeys, delegationOf, readPrivateKey } from './offline.js';

export interface TufRelease {
  api: TrustApi;
  app: string;
  delegation: { role: string; keys: Key[]; threshold: number };
  // The app's current delegated targets, or null before its first release under TUF.
  current: Metadata<Targets> | null;
  keys: Array<{ file: string; key: KeyObject }>;
}

export interface SignedAppTargets {
  role: string;
  version: number;
  targets: string[];
  keyids: string[];
}

// Whether `app`'s release is signed under TUF through this command's server, checked before
// anything is signed or uploaded: the delegation's keys among `keyFiles`, a threshold of them.
// null: no repository, or no delegation of the app (said on stderr), or a command on the
// database; then exactly one --key.
export async function prepareTufRelease(cmd: Command, app: string, keyFiles: string[]): Promise<TufRelease | null> {
  const one = (why: string) => {
    if (keyFiles.length > 1) throw new StewardError('USAGE', `--key was given ${keyFiles.length} times, but ${why}: pass one --key`);
    return null;
  };
  const t = targetOf(cmd);
  if (t.kind !== 'remote') return one('several keys sign a TUF delegation through --server only');
  const api = new TrustApi(t.remote);
  const status = await api.statusIfAny();
  if (!status || (!status.root && !status.raw['root'])) return one('the server has no TUF repository (`steward-control trust status`)');
  // The server's summary of its delegations says whether the app is delegated even when it sends
  // no metadata; signing under TUF needs the metadata itself.
  const summary = Array.isArray(status.raw['apps']) && (status.raw['apps'] as Array<{ app?: unknown }>).some((a) => a.app === app);
  if (summary || status.targets) needMetadata(status, `sign ${app}'s release under TUF`);
  const delegation = delegationOf(status.targets, app);
  if (!delegation) {
    process.stderr.write(`warning: the fleet's TUF repository does not delegate ${app}: hosts under the tuf scheme will not install this release; \`steward-control trust delegate ${app} --keys ...\` gives ${app} its keys\n`);
    return one(`the TUF repository does not delegate ${app}`);
  }
  const keys = keyFiles.map((file) => ({ file, key: readPrivateKey(file) }));
  checkDelegationKeys(app, delegation, keys);
  return { api, app, delegation, current: status.delegations.find((d) => d.app === app)?.metadata ?? null, keys };
}

// The app's next delegated targets with `release` added, signed here by each key, checked to
// meet the delegation's threshold, and uploaded.
export async function signAndUploadTargets(t: TufRelease, release: ReleaseTargets, now = Date.now()): Promise<SignedAppTargets> {
  const expires = now + APP_DELEGATION_LIFETIME_MS;
  const base = t.current ?? newAppTargets({ expires });
  let next: Metadata<Targets>;
  try {
    next = addReleaseTargets(base, release, { expires });
  } catch (err) {
    throw new StewardError('RELEASE_INVALID', `cannot add ${release.app} ${release.version} to the targets of ${t.delegation.role}: ${(err as Error).message}`, { cause: err });
  }
  for (const k of t.keys) signMetadata(next, k.key);
  const signed = signatureCount(next, t.delegation.keys);
  if (signed < t.delegation.threshold) throw new StewardError('INTERNAL', `${t.delegation.role}: ${signed} of ${t.delegation.threshold} signatures verify; nothing was uploaded`);
  await t.api.putApp(t.app, metadataBytes(next));
  return { role: t.delegation.role, version: next.signed.version, targets: Object.keys(next.signed.targets).filter((p) => p.startsWith(`${release.app}/${release.version}/`)).sort(), keyids: [...new Set(t.keys.map((k) => tufKeyIdOf(k.key)))].sort() };
}

// The manifest payload bytes the app's current targets name for `version` among `candidates`
// (the plain and the indexed manifest's), or a refusal: a downgrade target goes beside a release
// that was added under TUF.
export function manifestBytesInTargets(t: TufRelease, version: string, candidates: Buffer[]): Buffer {
  const entry = t.current?.signed.targets[`${t.app}/${version}/manifest.json`];
  const found = entry ? candidates.find((b) => createHash('sha256').update(b).digest('hex') === entry.hashes['sha256']) : undefined;
  if (!found) {
    throw new StewardError('NOT_FOUND', `${t.app} ${version} is not among ${t.delegation.role}'s targets${entry ? ' with the manifest the catalog holds' : ''}: \`steward-control release add ${t.app} ${version} ... --key ...\` with the delegation's keys signs it under TUF first`);
  }
  return found;
}
