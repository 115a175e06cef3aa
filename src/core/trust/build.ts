// Builders of a fleet's TUF metadata (docs/design.md §21.1). Each returns an unsigned
// `Metadata` of @tufjs/models, made through `Metadata.fromJSON` from the JSON a client reads, so
// what is signed is exactly what a client parses back. Signing is the caller's
// (src/platform/trust/tuf-keys.ts): the offline roles are signed on operators' machines, the
// online ones by steward-control. Times are epoch ms.
import { createHash } from 'node:crypto';
import { Key, Metadata, MetadataKind, type Root, type Snapshot, type Targets, type Timestamp } from '@tufjs/models';
import { canonicalBytes } from '../canonical-json.js';
import { downgradePayloadSchema } from '../downgrade-schema.js';
import { manifestPayloadSchema } from '../release-schemas.js';
import { isEd25519TufKey } from './key-id.js';
import {
  DEFAULT_THRESHOLD,
  delegatedPathPattern,
  delegatedRoleName,
  DIRECTOR_FIELD,
  downgradeTargetPath,
  indexTargetPath,
  manifestTargetPath,
  SIGNED_AT_FIELD,
  SNAPSHOT_LIFETIME_MS,
  TIMESTAMP_LIFETIME_MS,
  TUF_SPEC_VERSION,
  tufTime,
} from './roles.js';

type JsonObject = Parameters<typeof Metadata.fromJSON>[1];

function parse(kind: MetadataKind.Root, signed: Record<string, unknown>): Metadata<Root>;
function parse(kind: MetadataKind.Targets, signed: Record<string, unknown>): Metadata<Targets>;
function parse(kind: MetadataKind.Snapshot, signed: Record<string, unknown>): Metadata<Snapshot>;
function parse(kind: MetadataKind.Timestamp, signed: Record<string, unknown>): Metadata<Timestamp>;
function parse(kind: MetadataKind, signed: Record<string, unknown>): Metadata<Root | Targets | Snapshot | Timestamp> {
  // A JSON round trip drops what JSON has no word for (undefined fields), as a client's parse would.
  const json = JSON.parse(JSON.stringify({ signed: { _type: kind, spec_version: TUF_SPEC_VERSION, ...signed }, signatures: [] })) as JsonObject;
  return Metadata.fromJSON(kind as MetadataKind.Root, json);
}

function checkVersion(version: number): number {
  if (!Number.isSafeInteger(version) || version < 1) throw new RangeError(`a metadata version is a whole number from 1, not ${version}`);
  return version;
}

// A role's keys: distinct Ed25519 keys labelled with their TUF key ids, and a threshold they can meet.
function roleOf(what: string, keys: readonly Key[], threshold: number): { keyids: string[]; threshold: number } {
  const ids = keys.map((k) => k.keyID);
  if (keys.length === 0) throw new RangeError(`${what} needs at least one key`);
  for (const k of keys) if (!isEd25519TufKey(k)) throw new TypeError(`${what}: key ${k.keyID} is not an Ed25519 key under its own TUF key id`);
  if (new Set(ids).size !== ids.length) throw new RangeError(`${what} lists a key twice`);
  if (!Number.isSafeInteger(threshold) || threshold < 1 || threshold > keys.length) {
    throw new RangeError(`${what}: a threshold of ${threshold} cannot be met by ${keys.length} keys`);
  }
  return { keyids: [...ids].sort(), threshold };
}

function keysJson(keys: Iterable<Key>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k.keyID] = k.toJSON();
  return out;
}

export interface RootKeys {
  rootKeys: Key[];
  // Of the root keys; 2 by default (docs/design.md §21.1), or 1 when there is a single root key.
  threshold?: number;
  // The targets role is offline and only delegates: the root's keys and threshold unless given.
  targetsKeys?: Key[];
  targetsThreshold?: number;
  // steward-control's online keys.
  snapshotKey: Key;
  timestampKey: Key;
  directorKey: Key;
}

export interface NewRootOptions extends RootKeys {
  expires: number;
  version?: number;
}

// A fleet's root: the four top-level roles, consistent snapshots, and the director's key in
// `keys` and in the signed field `x-steward-director` (a role TUF itself does not know).
export function newRoot(opts: NewRootOptions): Metadata<Root> {
  const threshold = opts.threshold ?? Math.min(DEFAULT_THRESHOLD, opts.rootKeys.length);
  const targetsKeys = opts.targetsKeys ?? opts.rootKeys;
  const targetsThreshold = opts.targetsThreshold ?? (opts.targetsKeys ? Math.min(DEFAULT_THRESHOLD, targetsKeys.length) : threshold);
  const roles = {
    root: roleOf('root', opts.rootKeys, threshold),
    targets: roleOf('targets', targetsKeys, targetsThreshold),
    snapshot: roleOf('snapshot', [opts.snapshotKey], 1),
    timestamp: roleOf('timestamp', [opts.timestampKey], 1),
  };
  const director = roleOf('the director', [opts.directorKey], 1);
  const all = [...opts.rootKeys, ...targetsKeys, opts.snapshotKey, opts.timestampKey, opts.directorKey];
  return parse(MetadataKind.Root, {
    version: checkVersion(opts.version ?? 1),
    expires: tufTime(opts.expires),
    consistent_snapshot: true,
    keys: keysJson(new Map(all.map((k) => [k.keyID, k])).values()),
    roles,
    [DIRECTOR_FIELD]: director,
  });
}

// The keys of the roles of a root as newRoot takes them, read back from the root.
function rootKeysOf(root: Root): RootKeys & { threshold: number; targetsThreshold: number } {
  const keysOf = (ids: readonly string[]) =>
    ids.map((id) => {
      const k = root.keys[id];
      if (!k) throw new TypeError(`the root names key ${id} but does not hold it`);
      return k;
    });
  const role = (name: string) => {
    const r = root.roles[name];
    if (!r) throw new TypeError(`the root has no ${name} role`);
    return r;
  };
  const director = root.unrecognizedFields[DIRECTOR_FIELD] as { keyids?: unknown } | undefined;
  const directorIds = Array.isArray(director?.keyids) ? (director.keyids as string[]) : [];
  const one = (what: string, keys: Key[]) => {
    if (keys.length !== 1) throw new TypeError(`the root's ${what} has ${keys.length} keys, not one`);
    return keys[0] as Key;
  };
  return {
    rootKeys: keysOf(role('root').keyIDs),
    threshold: role('root').threshold,
    targetsKeys: keysOf(role('targets').keyIDs),
    targetsThreshold: role('targets').threshold,
    snapshotKey: one('snapshot role', keysOf(role('snapshot').keyIDs)),
    timestampKey: one('timestamp role', keysOf(role('timestamp').keyIDs)),
    directorKey: one(DIRECTOR_FIELD, keysOf(directorIds)),
  };
}

export type RootChanges = Partial<RootKeys> & { expires: number };

// The next root: version + 1, the changed keys and thresholds, the rest as they were. A client
// trusts it only when it is signed by a threshold of the previous root's keys and of its own, so
// the caller signs it with both sets.
export function rotateRoot(prev: Metadata<Root>, changes: RootChanges): Metadata<Root> {
  const was = rootKeysOf(prev.signed);
  const rootKeys = changes.rootKeys ?? was.rootKeys;
  const threshold = changes.threshold ?? (changes.rootKeys ? Math.min(was.threshold, rootKeys.length) : was.threshold);
  return newRoot({
    rootKeys,
    threshold,
    targetsKeys: changes.targetsKeys ?? was.targetsKeys,
    targetsThreshold: changes.targetsThreshold ?? (changes.targetsKeys ? Math.min(DEFAULT_THRESHOLD, changes.targetsKeys.length) : was.targetsThreshold),
    snapshotKey: changes.snapshotKey ?? was.snapshotKey,
    timestampKey: changes.timestampKey ?? was.timestampKey,
    directorKey: changes.directorKey ?? was.directorKey,
    expires: changes.expires,
    version: prev.signed.version + 1,
  });
}

// The top-level targets: no targets of its own, only the apps' delegations (delegateApp).
export function newTopTargets(opts: { expires: number; version?: number }): Metadata<Targets> {
  return parse(MetadataKind.Targets, { version: checkVersion(opts.version ?? 1), expires: tufTime(opts.expires), targets: {}, delegations: { keys: {}, roles: [] } });
}

// An app's delegated targets before its first release.
export function newAppTargets(opts: { expires: number; version?: number }): Metadata<Targets> {
  return parse(MetadataKind.Targets, { version: checkVersion(opts.version ?? 1), expires: tufTime(opts.expires), targets: {} });
}

// The targets with `app` delegated to `keys` (threshold of them): version + 1, any earlier
// delegation of that app replaced, the others kept. The role is terminating, so a client that
// does not find an app's target under it looks nowhere else.
export function delegateApp(targets: Metadata<Targets>, app: string, keys: Key[], threshold: number, opts: { expires?: number } = {}): Metadata<Targets> {
  const name = delegatedRoleName(app);
  const role = roleOf(name, keys, threshold);
  const d = targets.signed.delegations;
  if (d?.succinctRoles) throw new TypeError('the targets delegate by hash bins, which steward does not use');
  const others = Object.values(d?.roles ?? {})
    .filter((r) => r.name !== name)
    .map((r) => r.toJSON());
  const roles = [...others, { name, ...role, terminating: true, paths: [delegatedPathPattern(app)] }].sort((a, b) =>
    String(a['name']) < String(b['name']) ? -1 : 1,
  );
  // The keys any remaining role still names, and the new ones.
  const used = new Set(roles.flatMap((r) => r['keyids'] as string[]));
  const kept = Object.values(d?.keys ?? {}).filter((k) => used.has(k.keyID));
  return parse(MetadataKind.Targets, {
    ...targets.signed.toJSON(),
    version: targets.signed.version + 1,
    expires: opts.expires === undefined ? targets.signed.expires : tufTime(opts.expires),
    delegations: { keys: keysJson(new Map([...kept, ...keys].map((k) => [k.keyID, k])).values()), roles },
  });
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const sha512 = (b: Buffer) => createHash('sha512').update(b).digest('hex');

// Bytes that are canonical JSON (docs/design.md §6) of a payload `schema` accepts, or a throw:
// a target's bytes are what a host verifies and parses, never re-encodes.
function canonicalPayload<T>(what: string, bytes: Buffer, schema: { safeParse(v: unknown): { success: true; data: T } | { success: false } }): T {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new TypeError(`${what} is not JSON`);
  }
  if (!canonicalBytes(value).equals(bytes)) throw new TypeError(`${what} is not canonical JSON`);
  const r = schema.safeParse(value);
  if (!r.success) throw new TypeError(`${what} is not a valid payload`);
  return r.data;
}

export interface ReleaseTargets {
  app: string;
  version: string;
  // The canonical bytes P of the manifest payload, as a manifest envelope signs them.
  manifestBytes: Buffer;
  // The release's file index (docs/design.md §20), when it has one.
  indexBytes?: Buffer;
  // The canonical {app, version, notAfter} of a downgrade authorization (docs/design.md §18).
  downgradeBytes?: Buffer;
}

// An app's delegated targets with one release's targets added (or replaced): version + 1.
export function addReleaseTargets(appTargets: Metadata<Targets>, release: ReleaseTargets, opts: { expires?: number } = {}): Metadata<Targets> {
  const { app, version } = release;
  const manifest = canonicalPayload('the manifest', release.manifestBytes, manifestPayloadSchema);
  if (manifest.name !== app || manifest.version !== version) throw new TypeError(`the manifest is of ${manifest.name} ${manifest.version}, not ${app} ${version}`);
  const custom = { steward: { app, version } };
  const targets: Record<string, unknown> = { ...(appTargets.signed.toJSON()['targets'] as Record<string, unknown>) };
  targets[manifestTargetPath(app, version)] = {
    length: release.manifestBytes.length,
    hashes: { sha256: sha256(release.manifestBytes), sha512: sha512(release.manifestBytes) },
    custom,
  };
  if (release.indexBytes) {
    const index = release.indexBytes;
    // The sha512 is the digest the manifest's index.integrity names (in hex here, base64 there).
    if (manifest.index && (manifest.index.integrity !== `sha512-${createHash('sha512').update(index).digest('base64')}` || manifest.index.size !== index.length)) {
      throw new TypeError("the index bytes are not the index the manifest's index field names");
    }
    targets[indexTargetPath(app, version)] = { length: index.length, hashes: { sha256: sha256(index), sha512: sha512(index) }, custom };
  }
  if (release.downgradeBytes) {
    const d = canonicalPayload('the downgrade authorization', release.downgradeBytes, downgradePayloadSchema);
    if (d.app !== app || d.version !== version) throw new TypeError(`the downgrade authorization is for ${d.app} ${d.version}, not ${app} ${version}`);
    targets[downgradeTargetPath(app, version)] = {
      length: release.downgradeBytes.length,
      hashes: { sha256: sha256(release.downgradeBytes), sha512: sha512(release.downgradeBytes) },
      custom,
    };
  }
  return parse(MetadataKind.Targets, {
    ...appTargets.signed.toJSON(),
    version: appTargets.signed.version + 1,
    expires: opts.expires === undefined ? appTargets.signed.expires : tufTime(opts.expires),
    targets,
  });
}

// The snapshot: the version of every targets metadata file, by role name ("targets", "app.web").
export function newSnapshot(targetsVersions: ReadonlyMap<string, number>, version: number, now: number, lifetimeMs = SNAPSHOT_LIFETIME_MS): Metadata<Snapshot> {
  if (!targetsVersions.has('targets')) throw new TypeError('a snapshot names the top-level targets');
  const meta: Record<string, unknown> = {};
  for (const [role, v] of [...targetsVersions].sort(([a], [b]) => (a < b ? -1 : 1))) meta[`${role}.json`] = { version: checkVersion(v) };
  return parse(MetadataKind.Snapshot, { version: checkVersion(version), expires: tufTime(now + lifetimeMs), meta });
}

// The timestamp: the snapshot's version, length and sha256, expiring TIMESTAMP_LIFETIME_MS after
// `now`, and `now` itself in the signed field x-steward-signed-at.
export function newTimestamp(snapshotMetadataBytes: Buffer, snapshotVersion: number, version: number, now: number): Metadata<Timestamp> {
  return parse(MetadataKind.Timestamp, {
    version: checkVersion(version),
    expires: tufTime(now + TIMESTAMP_LIFETIME_MS),
    meta: { 'snapshot.json': { version: checkVersion(snapshotVersion), length: snapshotMetadataBytes.length, hashes: { sha256: sha256(snapshotMetadataBytes) } } },
    [SIGNED_AT_FIELD]: tufTime(now),
  });
}

// The bytes of a metadata file as steward writes it: the JSON of `Metadata.toJSON()`. Clients
// verify signatures over the canonical form of `signed`, never over these bytes, so they need
// not be canonical; the snapshot's and timestamp's length and hashes are of these bytes.
export function metadataBytes(md: Metadata<Root | Targets | Snapshot | Timestamp>): Buffer {
  return Buffer.from(JSON.stringify(md.toJSON()), 'utf8');
}
