// What `GET /v1/admin/trust` answers (docs/design.md §21.2, §21.4): the published root's version,
// keys, thresholds and expiry; the pending root and targets with the signatures gathered and
// needed; each app's delegation (keys, threshold, its targets' version and expiry); the
// snapshot's and timestamp's versions and expiry; the online key ids; how many nodes trust by
// each scheme and how many of the `tuf` ones are metadata-stale.
import { MetadataKind, type Metadata, type Root } from '@tufjs/models';
import { appOfRole } from '../../core/trust/roles.js';
import type { NodeRow, PendingRole, StoreReader } from '../store/store.js';
import { isMetadataStale } from './freshness.js';
import { currentRoot, currentSnapshot, currentTargets, currentTimestamp, onlineKeys, parseMetadata, pendingOnlineKeys, signedAtOf, tallyOf, targetsVerify, type Tally } from './repository.js';

export interface TrustStatus {
  repository: boolean;
  onlineKeys: { snapshot: string; timestamp: string; director: string } | null;
  // New online keys a rotation made, by role, not yet in use (null: none): the pending root names
  // them, and its publication makes them the only ones the control plane signs with.
  pendingOnlineKeys: Partial<Record<'snapshot' | 'timestamp' | 'director', string>> | null;
  // Each published item carries its metadata file as stored (`metadata`), which the trust commands
  // build on and sign over on the operator's machine, never a summary of it.
  root: { version: number; expires: string; keyids: string[]; threshold: number; targets: { keyids: string[]; threshold: number }; metadata: unknown } | null;
  // `metadata`: the pending file as stored, signatures gathered so far included, for another
  // operator to sign on their machine (its `signed` is what each signature covers).
  pending: Record<PendingRole, { version: number; signatures: Tally[]; updatedAt: number; updatedBy: string | null; metadata: unknown } | null>;
  // `verifies`: the published root's targets role signs them (false after a rotation of its keys,
  // until the targets are signed again).
  targets: { version: number; expires: string; verifies: boolean; metadata: unknown } | null;
  apps: Array<{ app: string; role: string; keyids: string[]; threshold: number; version: number | null; expires: string | null; metadata: unknown }>;
  snapshot: { version: number; expires: string } | null;
  timestamp: { version: number; expires: string; signedAt: number | null } | null;
  nodes: { keys: number; tuf: number; unreported: number; metadataStale: number };
}

export async function trustStatus(tx: StoreReader, nodes?: readonly NodeRow[]): Promise<TrustStatus> {
  const keys = await onlineKeys(tx);
  const newKeys = Object.entries(await pendingOnlineKeys(tx)).map(([role, k]) => [role, k.tuf.keyID] as const);
  const root = await currentRoot(tx);
  const top = await currentTargets(tx);
  const snapshot = await currentSnapshot(tx);
  const timestamp = await currentTimestamp(tx);
  const pending = async (role: PendingRole) => {
    const row = await tx.trust.pending(role);
    if (!row) return null;
    const md = role === 'root' ? parseMetadata(MetadataKind.Root, row.bytes) : parseMetadata(MetadataKind.Targets, row.bytes);
    return { version: md.signed.version, signatures: await tallyOf(tx, role, md), updatedAt: row.updatedAt, updatedBy: row.updatedBy, metadata: JSON.parse(row.bytes) as unknown };
  };
  const appRows = new Map((await tx.trust.latestOf('app.')).map((r) => [r.role, r]));
  const apps: TrustStatus['apps'] = [];
  for (const d of Object.values(top?.md.signed.delegations?.roles ?? {})) {
    const app = appOfRole(d.name);
    if (app === null) continue;
    const row = appRows.get(d.name);
    const md = row ? parseMetadata(MetadataKind.Targets, row.bytes) : null;
    apps.push({ app, role: d.name, keyids: [...d.keyIDs], threshold: d.threshold, version: md?.signed.version ?? null, expires: md?.signed.expires ?? null, metadata: row ? (JSON.parse(row.bytes) as unknown) : null });
  }
  const all = nodes ?? (await tx.nodes.list());
  const counts = { keys: 0, tuf: 0, unreported: 0, metadataStale: 0 };
  for (const n of all) {
    if (!n.trust) counts.unreported++;
    else counts[n.trust.scheme]++;
    if (isMetadataStale(n, !!timestamp)) counts.metadataStale++;
  }
  return {
    repository: !!timestamp,
    onlineKeys: keys && { snapshot: keys.snapshot.tuf.keyID, timestamp: keys.timestamp.tuf.keyID, director: keys.director.tuf.keyID },
    pendingOnlineKeys: newKeys.length ? Object.fromEntries(newKeys) : null,
    root: root && { ...rootView(root.md), metadata: JSON.parse(root.row.bytes) as unknown },
    pending: { root: await pending('root'), targets: await pending('targets') },
    targets: top && { version: top.md.signed.version, expires: top.md.signed.expires, verifies: root !== null && targetsVerify(root.md, top.md), metadata: JSON.parse(top.row.bytes) as unknown },
    apps: apps.sort((a, b) => (a.app < b.app ? -1 : 1)),
    snapshot: snapshot && { version: snapshot.md.signed.version, expires: snapshot.md.signed.expires },
    timestamp: timestamp && { version: timestamp.md.signed.version, expires: timestamp.md.signed.expires, signedAt: signedAtOf(timestamp.md) },
    nodes: counts,
  };
}

function rootView(md: Metadata<Root>): Omit<NonNullable<TrustStatus['root']>, 'metadata'> {
  const r = md.signed.roles['root'];
  const t = md.signed.roles['targets'];
  return {
    version: md.signed.version,
    expires: md.signed.expires,
    keyids: [...(r?.keyIDs ?? [])],
    threshold: r?.threshold ?? 0,
    targets: { keyids: [...(t?.keyIDs ?? [])], threshold: t?.threshold ?? 0 },
  };
}
