// The fleet's TUF repository as steward-control keeps it (docs/design.md §21.2, §21.4): the online
// keys (made once; new ones pending until the root naming them is published), the pending root
// and top-level targets gathering the offline keys' signatures, each app's delegated targets, and
// the snapshot and timestamp signed online at every publication. Every check of a signature is
// @tufjs/models' own (`verifyDelegate`, `Key.verifySignature`), the one tuf-js runs on a host:
// what publishes here is what verifies there. Each function runs inside the caller's write transaction.
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { Metadata, MetadataKind, Signature, type Key, type Root, type Snapshot, type Targets, type Timestamp } from '@tufjs/models';
import { StewardError } from '../../core/errors.js';
import { metadataBytes, newSnapshot, newTimestamp } from '../../core/trust/build.js';
import { appOfRole, delegatedRoleName, DIRECTOR_FIELD, SIGNED_AT_FIELD, TIMESTAMP_RESIGN_MS } from '../../core/trust/roles.js';
import { parsePrivateKey } from '../../platform/keys.js';
import { signatureCount, signMetadata, tufKeyOf } from '../../platform/trust/tuf-keys.js';
import type { OnlineRole, PendingRole, StoreReader, StoreTx, TrustKeyRow, TrustMetadataRow } from '../store/store.js';

type AnyMetadata = Metadata<Root | Targets | Snapshot | Timestamp>;
type JsonObject = Parameters<typeof Metadata.fromJSON>[1];

const ONLINE_ROLES: readonly OnlineRole[] = ['snapshot', 'timestamp', 'director'];

// The most bytes one metadata file may have (an app's targets grow with its releases).
export const MAX_METADATA_BYTES = 4 * 1024 * 1024;

// Metadata of `kind` from the text an operator sent, or USAGE/BAD_BODY naming what is wrong.
export function parseMetadata(kind: MetadataKind.Root, text: string): Metadata<Root>;
export function parseMetadata(kind: MetadataKind.Targets, text: string): Metadata<Targets>;
export function parseMetadata(kind: MetadataKind.Snapshot, text: string): Metadata<Snapshot>;
export function parseMetadata(kind: MetadataKind.Timestamp, text: string): Metadata<Timestamp>;
export function parseMetadata(kind: MetadataKind, text: string): AnyMetadata {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new StewardError('USAGE', `the ${kind} metadata is not JSON`);
  }
  const type = (json as { signed?: { _type?: unknown } } | null)?.signed?._type;
  if (type !== kind) throw new StewardError('USAGE', `the metadata is of type ${JSON.stringify(type ?? null)}, not ${kind}`);
  try {
    return Metadata.fromJSON(kind as MetadataKind.Root, json as JsonObject);
  } catch (err) {
    throw new StewardError('USAGE', `the ${kind} metadata is not valid TUF metadata: ${(err as Error).message}`);
  }
}

// The online keys: their private keys and TUF keys, or null before they are made.
export interface OnlineKeys {
  snapshot: { key: KeyObject; tuf: Key };
  timestamp: { key: KeyObject; tuf: Key };
  director: { key: KeyObject; tuf: Key };
}

export async function onlineKeys(tx: StoreReader): Promise<OnlineKeys | null> {
  const rows = await tx.trust.keys();
  const out: Partial<OnlineKeys> = {};
  for (const r of rows) {
    const key = parsePrivateKey(r.privateKey);
    out[r.role] = { key, tuf: tufKeyOf(key) };
  }
  return out.snapshot && out.timestamp && out.director ? (out as OnlineKeys) : null;
}

// A fresh Ed25519 key pair for an online role, as trust_keys keeps it.
function newKeyRow(role: OnlineRole, now: number): TrustKeyRow {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { role, privateKey: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), publicKey: publicKey.export({ format: 'pem', type: 'spki' }).toString(), createdAt: now };
}

// Makes the online keys the first time; after that answers the same ones (a request sent again,
// by a retry or trust init --replace, gets what the first got: new keys come only by rotation).
export async function makeOnlineKeys(tx: StoreTx): Promise<OnlineKeys> {
  if ((await tx.trust.keys()).length === 0) {
    const now = await tx.now();
    // Another instance making them at the same moment: its insert won, and its keys are answered.
    await tx.trust.insertKeys(ONLINE_ROLES.map((role) => newKeyRow(role, now)));
  }
  const keys = await onlineKeys(tx);
  if (!keys) throw new StewardError('STATE_INVALID', 'the online keys are incomplete in the database (a role is missing): restore them from a backup');
  return keys;
}

// The pending new online keys by role (trust_pending_keys), each with its TUF key.
export async function pendingOnlineKeys(tx: StoreReader): Promise<Partial<OnlineKeys>> {
  const out: Partial<OnlineKeys> = {};
  for (const r of await tx.trust.pendingKeys()) {
    const key = parsePrivateKey(r.privateKey);
    out[r.role] = { key, tuf: tufKeyOf(key) };
  }
  return out;
}

// The online key ids a root names, by role (the director's in its x-steward-director field).
function namedOnlineKeyIds(root: Root): Record<OnlineRole, string | null> {
  const one = (ids: readonly string[] | undefined) => (ids && ids.length === 1 ? (ids[0] as string) : null);
  const director = root.unrecognizedFields[DIRECTOR_FIELD] as { keyids?: unknown } | undefined;
  return {
    snapshot: one(root.roles['snapshot']?.keyIDs),
    timestamp: one(root.roles['timestamp']?.keyIDs),
    director: Array.isArray(director?.keyids) ? one(director.keyids.filter((k): k is string => typeof k === 'string')) : null,
  };
}

export interface RotatedKeys {
  // The keys a root built on this answer names: the pending new key of each role asked for, the
  // current key of the others.
  keys: OnlineKeys;
  // The roles whose key is a pending new one, and whether this request made any of them.
  rotated: OnlineRole[];
  made: OnlineRole[];
  dropped: OnlineRole[];
}

// New online keys for `roles` (trust rotate --new-online), pending beside the ones in use until a
// root naming them is published. Idempotent: the pending key of a role asked for again is
// answered again, never made anew. A pending key of a role not asked for is dropped, unless the
// pending root names it: then only `replace` (trust rotate --replace) may drop it.
export async function rotateOnlineKeys(tx: StoreTx, roles: readonly OnlineRole[], replace: boolean): Promise<RotatedKeys> {
  const current = await onlineKeys(tx);
  if (!current) throw new StewardError('USAGE', 'this control plane has no online keys yet: `steward-control trust init` makes them (and root v1 naming them)');
  if (!(await currentRoot(tx))) throw new StewardError('USAGE', 'no root is published yet: finish the ceremony of root v1 (trust sign-root), or start it over with `trust init --replace`; new online keys are named by a rotation of a published root');
  const pending = await pendingOnlineKeys(tx);
  const held = ONLINE_ROLES.filter((r) => pending[r] !== undefined);
  const drop = held.filter((r) => !roles.includes(r));
  if (drop.length > 0 && !replace) {
    const row = await tx.trust.pending('root');
    const named = row ? namedOnlineKeyIds(parseMetadata(MetadataKind.Root, row.bytes).signed) : null;
    const inUse = named ? drop.filter((r) => named[r] === pending[r]!.tuf.keyID) : [];
    if (inUse.length > 0) {
      throw conflict(`a rotation is pending: root v${parseMetadata(MetadataKind.Root, row!.bytes).signed.version} names new online keys for ${inUse.join(', ')}; sign it (trust sign-root), or start over with \`trust rotate --new-online ... --replace\``);
    }
  }
  await tx.trust.dropPendingKeys(drop);
  const now = await tx.now();
  const made = roles.filter((r) => pending[r] === undefined);
  if (!(await tx.trust.insertPendingKeys(made.map((r) => newKeyRow(r, now))))) throw new StewardError('BUSY', 'another request made new online keys at the same time; retry');
  const fresh = await pendingOnlineKeys(tx);
  const keys = { ...current };
  for (const r of roles) keys[r] = fresh[r]!;
  return { keys, rotated: [...roles], made, dropped: drop };
}

// A wrong version or a second making: 409, under the admin API's existing code for a state that
// does not allow the change.
function conflict(message: string): StewardError {
  return new StewardError('STATE_INVALID', message, { details: { httpStatus: 409 } });
}

export function onlineKeysJson(keys: OnlineKeys): Record<OnlineRole, { keyid: string; key: Record<string, unknown> }> {
  const one = (k: { tuf: Key }) => ({ keyid: k.tuf.keyID, key: k.tuf.toJSON() as Record<string, unknown> });
  return { snapshot: one(keys.snapshot), timestamp: one(keys.timestamp), director: one(keys.director) };
}

async function latestOf<T extends AnyMetadata>(tx: StoreReader, role: string, kind: MetadataKind): Promise<{ row: TrustMetadataRow; md: T } | null> {
  const row = await tx.trust.latest(role);
  if (!row) return null;
  return { row, md: Metadata.fromJSON(kind as MetadataKind.Root, JSON.parse(row.bytes) as JsonObject) as unknown as T };
}

export const currentRoot = (tx: StoreReader) => latestOf<Metadata<Root>>(tx, 'root', MetadataKind.Root);
export const currentTargets = (tx: StoreReader) => latestOf<Metadata<Targets>>(tx, 'targets', MetadataKind.Targets);
export const currentSnapshot = (tx: StoreReader) => latestOf<Metadata<Snapshot>>(tx, 'snapshot', MetadataKind.Snapshot);
export const currentTimestamp = (tx: StoreReader) => latestOf<Metadata<Timestamp>>(tx, 'timestamp', MetadataKind.Timestamp);

// The threshold of `app`'s delegation in the published top-level targets, or null when the
// repository delegates nothing to it (or has no targets, or targets this cannot read back): what
// `release allow-downgrade` and `release add` sign with under TUF (docs/trust.md).
export async function appDelegation(tx: StoreReader, app: string): Promise<{ role: string; threshold: number } | null> {
  const row = await tx.trust.latest('targets');
  if (!row) return null;
  try {
    const md = Metadata.fromJSON(MetadataKind.Targets, JSON.parse(row.bytes) as JsonObject);
    const role = delegatedRoleName(app);
    const r = md.signed.delegations?.roles?.[role];
    return r ? { role, threshold: r.threshold } : null;
  } catch {
    return null;
  }
}

function roleKeys(root: Root, role: string): { keys: Key[]; threshold: number } {
  const r = root.roles[role];
  if (!r) return { keys: [], threshold: 1 };
  return { keys: r.keyIDs.map((id) => root.keys[id]).filter((k): k is Key => k !== undefined), threshold: r.threshold };
}

// The signatures a pending item has and needs: for a root, a threshold of the previous root's
// keys (none for the first) and of its own; for the targets, of the current root's targets role.
export interface Tally {
  role: string;
  have: number;
  need: number;
  keyids: string[];
}

export async function tallyOf(tx: StoreReader, role: PendingRole, md: AnyMetadata): Promise<Tally[]> {
  const prev = await currentRoot(tx);
  if (role === 'root') {
    const own = roleKeys((md as Metadata<Root>).signed, 'root');
    const out: Tally[] = [];
    if (prev) {
      const was = roleKeys(prev.md.signed, 'root');
      out.push({ role: `root ${prev.md.signed.version}`, have: signatureCount(md, was.keys), need: was.threshold, keyids: was.keys.map((k) => k.keyID) });
    }
    out.push({ role: `root ${md.signed.version}`, have: signatureCount(md, own.keys), need: own.threshold, keyids: own.keys.map((k) => k.keyID) });
    return out;
  }
  if (!prev) return [{ role: 'targets', have: 0, need: 1, keyids: [] }];
  const t = roleKeys(prev.md.signed, 'targets');
  return [{ role: 'targets', have: signatureCount(md, t.keys), need: t.threshold, keyids: t.keys.map((k) => k.keyID) }];
}

// The keys that may sign a pending item: for a root, the previous root's root keys and its own;
// for the targets, the current root's targets keys.
async function signersOf(tx: StoreReader, role: PendingRole, md: AnyMetadata): Promise<Map<string, Key>> {
  const prev = (await currentRoot(tx))?.md.signed;
  const sets = role === 'root' ? [...(prev ? [roleKeys(prev, 'root').keys] : []), roleKeys((md as Metadata<Root>).signed, 'root').keys] : prev ? [roleKeys(prev, 'targets').keys] : [];
  return new Map(sets.flat().map((k) => [k.keyID, k]));
}

// Checks every signature a metadata carries against the keys that may sign it: one by another key
// is FORBIDDEN, one that does not verify SIGNATURE_INVALID.
function checkSignatures(md: AnyMetadata, signers: ReadonlyMap<string, Key>, what: string): void {
  for (const [id, sig] of Object.entries(md.signatures)) {
    const key = signers.get(id);
    if (!key) throw new StewardError('FORBIDDEN', `key ${id} may not sign ${what}`);
    const one = Metadata.fromJSON(md.signed.type as MetadataKind.Root, { ...(md.toJSON() as Record<string, unknown>), signatures: [sig.toJSON()] } as JsonObject);
    try {
      key.verifySignature(one);
    } catch {
      throw new StewardError('SIGNATURE_INVALID', `the signature of key ${id} does not verify over ${what}`);
    }
  }
}

// The version a pending item must have: the next after the published one (1 for the first).
async function checkNextVersion(tx: StoreReader, role: PendingRole, md: AnyMetadata): Promise<void> {
  const latest = await tx.trust.latest(role);
  const next = (latest?.version ?? 0) + 1;
  if (md.signed.version !== next) throw conflict(`${role} version ${md.signed.version} is not the next one: ${latest ? `version ${latest.version} is published` : 'none is published'}, so it is ${next}`);
}

// A root must name, for its snapshot, timestamp and director, one key each that this control plane
// holds: the one in use or a pending new one (trust rotate --new-online); it signs with no other.
// Answers, by role, whether the root names the pending key (the switch its publication makes).
async function checkRootNamesOnlineKeys(tx: StoreReader, root: Root): Promise<Record<OnlineRole, boolean>> {
  const keys = await onlineKeys(tx);
  if (!keys) throw new StewardError('USAGE', 'make the online keys first (POST /v1/admin/trust/online-keys): a root names them');
  const pending = await pendingOnlineKeys(tx);
  const named = namedOnlineKeyIds(root);
  const out = { snapshot: false, timestamp: false, director: false };
  for (const role of ONLINE_ROLES) {
    const id = named[role];
    if (id !== null && id === pending[role]?.tuf.keyID) out[role] = true;
    else if (id !== keys[role].tuf.keyID) {
      const also = pending[role] ? ` nor its pending new ${role} key ${pending[role]!.tuf.keyID}` : '';
      throw new StewardError('USAGE', `the root's ${role} key is not this control plane's online ${role} key ${keys[role].tuf.keyID}${also}`);
    }
  }
  return out;
}

// Drops the pending online keys a root does not name: nothing will ever sign with them.
async function dropUnnamedPendingKeys(tx: StoreTx, names: Record<OnlineRole, boolean>): Promise<OnlineRole[]> {
  const drop = (await tx.trust.pendingKeys()).map((r) => r.role).filter((r) => !names[r]);
  await tx.trust.dropPendingKeys(drop);
  return drop;
}

// The switch a root's publication makes, in its transaction: each pending key it names takes the
// place of the key in use (whose private key is deleted), every other pending key is dropped.
// Signing after this (the snapshot and timestamp below, directives) reads the new keys.
async function switchOnlineKeys(tx: StoreTx, names: Record<OnlineRole, boolean>): Promise<OnlineRole[]> {
  const pending = await pendingOnlineKeys(tx);
  const rows = new Map((await tx.trust.pendingKeys()).map((r) => [r.role, r]));
  const switched: OnlineRole[] = [];
  for (const role of ONLINE_ROLES) {
    if (!names[role]) continue;
    const row = rows.get(role);
    if (!row || !pending[role] || !(await tx.trust.promotePendingKey(role, row.publicKey))) throw conflict(`the new online ${role} key this root names was dropped just now by another request`);
    switched.push(role);
  }
  await dropUnnamedPendingKeys(tx, names);
  return switched;
}

function checkNotExpired(md: AnyMetadata, now: number, what: string): void {
  if (md.signed.isExpired(new Date(now))) throw new StewardError('USAGE', `${what} expired at ${md.signed.expires}`);
}

export interface PendingResult {
  role: PendingRole;
  version: number;
  published: boolean;
  signatures: Tally[];
  // What the operator must do next (a root whose targets role no longer signs the published targets).
  warnings: string[];
  // The online roles whose new keys took over at this publication (a root naming them).
  switched: OnlineRole[];
}

// Stores the next root or top-level targets, unsigned or partly signed; publishes it when its
// thresholds are met.
export async function putPending(tx: StoreTx, role: PendingRole, text: string, by: string | null): Promise<PendingResult> {
  const md = role === 'root' ? parseMetadata(MetadataKind.Root, text) : parseMetadata(MetadataKind.Targets, text);
  const now = await tx.now();
  checkNotExpired(md, now, `the pending ${role}`);
  await checkNextVersion(tx, role, md);
  // A pending root that replaces one naming new online keys (trust rotate --replace) abandons
  // the keys it does not name.
  if (role === 'root') await dropUnnamedPendingKeys(tx, await checkRootNamesOnlineKeys(tx, (md as Metadata<Root>).signed));
  else if (!(await currentRoot(tx))) throw new StewardError('USAGE', 'publish a root first: the targets are signed under its targets role');
  checkSignatures(md, await signersOf(tx, role, md), `${role} version ${md.signed.version}`);
  return settlePending(tx, role, md, by);
}

// Adds signatures ({keyid, sig}) to the pending item; publishes it when its thresholds are met.
export async function addSignatures(tx: StoreTx, role: PendingRole, signatures: ReadonlyArray<{ keyid: string; sig: string }>, by: string | null): Promise<PendingResult> {
  const row = await tx.trust.pending(role);
  if (!row) throw new StewardError('NOT_FOUND', `there is no pending ${role}: PUT /v1/admin/trust/pending/${role} first`);
  const md = role === 'root' ? parseMetadata(MetadataKind.Root, row.bytes) : parseMetadata(MetadataKind.Targets, row.bytes);
  const signers = await signersOf(tx, role, md);
  const fresh = Metadata.fromJSON(md.signed.type as MetadataKind.Root, { ...(md.toJSON() as Record<string, unknown>), signatures: [] } as JsonObject);
  for (const s of signatures) fresh.signatures[s.keyid] = new Signature({ keyID: s.keyid, sig: s.sig });
  checkSignatures(fresh, signers, `the pending ${role} version ${md.signed.version}`);
  for (const [id, sig] of Object.entries(fresh.signatures)) md.signatures[id] = sig;
  return settlePending(tx, role, md, by);
}

async function settlePending(tx: StoreTx, role: PendingRole, md: AnyMetadata, by: string | null): Promise<PendingResult> {
  const now = await tx.now();
  const tally = await tallyOf(tx, role, md);
  const met = tally.every((t) => t.have >= t.need) && tally.every((t) => t.need >= 1);
  const version = md.signed.version;
  // Another version may have been published since this one was made pending.
  await checkNextVersion(tx, role, md);
  if (!met) {
    await tx.trust.setPending({ role, bytes: metadataBytes(md).toString('utf8'), updatedAt: now, updatedBy: by });
    return { role, version, published: false, signatures: tally, warnings: [], switched: [] };
  }
  // Checked again at publication: the keys it names must still be held (a pending key may have
  // been dropped since it was made pending).
  const names = role === 'root' ? await checkRootNamesOnlineKeys(tx, (md as Metadata<Root>).signed) : null;
  // The check a host makes, through @tufjs/models: the previous root's and its own thresholds
  // for a root, the root's targets role for the targets.
  const root = await currentRoot(tx);
  try {
    if (role === 'root') {
      if (root) root.md.verifyDelegate('root', md);
      (md as Metadata<Root>).verifyDelegate('root', md);
    } else {
      root!.md.verifyDelegate('targets', md);
    }
  } catch (err) {
    throw new StewardError('SIGNATURE_INVALID', `${role} version ${version} does not verify: ${(err as Error).message}`);
  }
  if (!(await tx.trust.publish({ role, version, bytes: metadataBytes(md).toString('utf8'), createdAt: now }))) {
    throw conflict(`${role} version ${version} was published just now by another request`);
  }
  await tx.trust.clearPending(role);
  const switched = names ? await switchOnlineKeys(tx, names) : [];
  const warnings: string[] = [];
  const top = await currentTargets(tx);
  if (top) {
    await publishSnapshot(tx, now);
    if (role === 'root' && !targetsVerify((md as Metadata<Root>), top.md)) {
      warnings.push(`the published targets version ${top.md.signed.version} are not signed by this root's targets role: hosts refuse them until targets version ${top.md.signed.version + 1}, signed by its keys, is published (PUT /v1/admin/trust/pending/targets)`);
    }
  }
  return { role, version, published: true, signatures: tally, warnings, switched };
}

// Whether `targets` verify under `root`'s targets role (what a host checks).
export function targetsVerify(root: Metadata<Root>, targets: Metadata<Targets>): boolean {
  try {
    root.verifyDelegate('targets', targets);
    return true;
  } catch {
    return false;
  }
}

// Publishes an app's delegated targets, signed on the operator's machine: they must verify under
// the app's delegation in the current top-level targets, with a version above the current one,
// and name only the app's own targets.
export async function putAppTargets(tx: StoreTx, app: string, text: string): Promise<{ app: string; role: string; version: number }> {
  let role: string;
  try {
    role = delegatedRoleName(app);
  } catch {
    throw new StewardError('USAGE', `not an app name: ${JSON.stringify(app.slice(0, 80))}`);
  }
  const md = parseMetadata(MetadataKind.Targets, text);
  const now = await tx.now();
  checkNotExpired(md, now, `the targets of ${role}`);
  const top = await currentTargets(tx);
  if (!top) throw new StewardError('NOT_FOUND', 'no top-level targets are published: an app is delegated in them first');
  if (!top.md.signed.delegations?.roles?.[role]) throw new StewardError('FORBIDDEN', `the top-level targets delegate nothing to ${role}: delegate the app first`);
  for (const path of Object.keys(md.signed.targets)) {
    if (!path.startsWith(`${app}/`)) throw new StewardError('FORBIDDEN', `${role} may sign only ${app}/…, not ${JSON.stringify(path.slice(0, 200))}`);
  }
  try {
    top.md.verifyDelegate(role, md);
  } catch (err) {
    throw new StewardError('SIGNATURE_INVALID', `the targets of ${role} do not verify under its delegation: ${(err as Error).message}`);
  }
  const latest = await tx.trust.latest(role);
  if (latest && md.signed.version <= latest.version) throw conflict(`${role} version ${md.signed.version} is not above the published version ${latest.version}`);
  if (!(await tx.trust.publish({ role, version: md.signed.version, bytes: metadataBytes(md).toString('utf8'), createdAt: now }))) {
    throw conflict(`${role} version ${md.signed.version} was published just now by another request`);
  }
  await publishSnapshot(tx, now);
  return { app, role, version: md.signed.version };
}

// A new snapshot naming the top-level targets and every app role's newest version, and a
// timestamp naming it, both signed with the online keys.
export async function publishSnapshot(tx: StoreTx, now: number): Promise<{ snapshot: number; timestamp: number }> {
  const keys = await onlineKeys(tx);
  if (!keys) throw new StewardError('STATE_INVALID', 'the online keys are missing: the snapshot cannot be signed');
  const top = await tx.trust.latest('targets');
  if (!top) throw new StewardError('STATE_INVALID', 'no top-level targets are published: there is nothing to snapshot');
  const versions = new Map<string, number>([['targets', top.version]]);
  for (const r of await tx.trust.latestOf('app.')) if (appOfRole(r.role) !== null) versions.set(r.role, r.version);
  const snapshotVersion = ((await tx.trust.latest('snapshot'))?.version ?? 0) + 1;
  const snapshot = newSnapshot(versions, snapshotVersion, now);
  signMetadata(snapshot, keys.snapshot.key);
  const snapshotBytes = metadataBytes(snapshot);
  if (!(await tx.trust.publish({ role: 'snapshot', version: snapshotVersion, bytes: snapshotBytes.toString('utf8'), createdAt: now }))) {
    throw new StewardError('BUSY', 'another instance published a snapshot at the same time; retry');
  }
  const timestamp = await signTimestamp(tx, keys, snapshotBytes, snapshotVersion, now);
  if (timestamp === null) throw new StewardError('BUSY', 'another instance published a timestamp at the same time; retry');
  return { snapshot: snapshotVersion, timestamp };
}

async function signTimestamp(tx: StoreTx, keys: OnlineKeys, snapshotBytes: Buffer, snapshotVersion: number, now: number): Promise<number | null> {
  const version = ((await tx.trust.latest('timestamp'))?.version ?? 0) + 1;
  const ts = newTimestamp(snapshotBytes, snapshotVersion, version, now);
  signMetadata(ts, keys.timestamp.key);
  return (await tx.trust.publish({ role: 'timestamp', version, bytes: metadataBytes(ts).toString('utf8'), createdAt: now })) ? version : null;
}

// The snapshot is re-made once half its week has passed, so it never expires under a host.
const SNAPSHOT_RENEW_MS = 3.5 * 24 * 3_600_000;

// Re-signs the timestamp when the newest is TIMESTAMP_RESIGN_MS old or older (and the snapshot
// when half its life has passed): the new version, or null when nothing was due, the repository
// has none yet, or another instance took the version first (its insert won; ours is dropped).
export async function resignIfDue(tx: StoreTx): Promise<number | null> {
  const now = await tx.now();
  const ts = await tx.trust.latest('timestamp');
  if (!ts || now - ts.createdAt < TIMESTAMP_RESIGN_MS) return null;
  const keys = await onlineKeys(tx);
  const snap = await tx.trust.latest('snapshot');
  if (!keys || !snap) return null;
  if (now - snap.createdAt >= SNAPSHOT_RENEW_MS) {
    try {
      return (await publishSnapshot(tx, now)).timestamp;
    } catch (err) {
      if (err instanceof StewardError && err.code === 'BUSY') return null;
      throw err;
    }
  }
  return signTimestamp(tx, keys, Buffer.from(snap.bytes, 'utf8'), snap.version, now);
}

// When a timestamp was signed (its x-steward-signed-at), epoch ms, or null.
export function signedAtOf(ts: Metadata<Timestamp>): number | null {
  const at = ts.signed.unrecognizedFields[SIGNED_AT_FIELD];
  const ms = typeof at === 'string' ? Date.parse(at) : NaN;
  return Number.isFinite(ms) ? ms : null;
}
