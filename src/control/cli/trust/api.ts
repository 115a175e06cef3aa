// The operator's side of the trust admin API (docs/design.md §21.2): the routes the trust commands
// and `release add` call on a steward-control admin listener, and the server's status read back
// into what they need. Offline metadata is built and signed on this machine (offline.ts); only
// public keys, signatures and signed metadata go to the server.
//
// The shapes this client assumes (agreed in the brief of the slice, to be checked against the
// server's when the two meet):
// - `GET /v1/admin/trust` answers `{root, targets, pending: {root, targets}, delegations,
//   timestamp?, snapshot?, nodes?}`, where `root`, `targets` and each pending item is null or
//   `{metadata}` (the JSON of the metadata file, `signed` and `signatures`; other fields are
//   ignored), each delegation `{app, metadata}` (metadata: the app's current delegated targets, or
//   null before its first release), `timestamp` `{version, signedAt (ISO 8601 or epoch ms),
//   expires}`, `nodes` `{byScheme: {keys: n, tuf: n}, metadataStale: n}`. Everything a command
//   decides on is read from the metadata itself, so the extra fields only feed `trust status`.
// - `POST /v1/admin/trust/online-keys` with `{}` (or `{rotate: [roles]}` for new keys of those
//   roles, which a root rotation then names) answers `{snapshot, timestamp, director}` (or under
//   `onlineKeys`, as the server's branch does), each a TUF key `{keytype, scheme, keyval:
//   {public}}` or `{keyid, key: <that>}`; the id is computed here, never taken.
// - The server's branch (trust-server) answers the status with summaries (`root: {version,
//   expires, keyids, threshold}`, `apps: [{app, keyids, threshold, version}]`, `nodes: {keys,
//   tuf, unreported, metadataStale}`) and, as of this writing, without the metadata: the commands
//   then refuse, naming what is missing (needMetadata), rather than sign what they cannot see.
// - `PUT /v1/admin/trust/pending/{root|targets}` and `PUT /v1/admin/trust/apps/{app}` take the
//   metadata file's bytes (`metadataBytes`) as the body.
// - `POST /v1/admin/trust/pending/{role}/signatures` takes `{signatures: [{keyid, sig}]}` and may
//   answer `{published: true|false}`.
import { Key, Metadata, MetadataKind, type Root, type Targets } from '@tufjs/models';
import type { Command } from 'commander';
import { StewardError } from '../../../core/errors.js';
import { tufKeyIdOfKey } from '../../../core/trust/key-id.js';
import { DIRECTOR_FIELD } from '../../../core/trust/roles.js';
import { targetOf } from '../context.js';
import { callAdminRoute, type RemoteTarget } from '../remote-client.js';

export const TRUST_ROUTE = '/v1/admin/trust';

export type PendingRole = 'root' | 'targets';

export interface Delegation {
  app: string;
  // The app's current delegated targets, or null before its first release under TUF.
  metadata: Metadata<Targets> | null;
}

export interface TrustStatus {
  // Whether the server has a root (published or pending) whose metadata it did not send: the
  // commands that build on it or sign it then refuse (missingMetadata).
  missing: string[];
  root: Metadata<Root> | null;
  targets: Metadata<Targets> | null;
  pending: { root: Metadata<Root> | null; targets: Metadata<Targets> | null };
  delegations: Delegation[];
  // The server's answer as it came, for --json and for what status shows beyond the metadata.
  raw: Record<string, unknown>;
}

export interface OnlineKeys {
  snapshot: Key;
  timestamp: Key;
  director: Key;
}

// The admin listener the trust commands talk to: they run through --server (or
// STEWARD_CONTROL_URL) only, since what they sign must be signed where the offline keys are.
export function trustTarget(cmd: Command): RemoteTarget {
  const t = targetOf(cmd);
  if (t.kind !== 'remote') {
    throw new StewardError('USAGE', '`trust` talks to a steward-control admin listener: pass --server URL (or set STEWARD_CONTROL_URL) with the operator token in STEWARD_CONTROL_TOKEN, from the machine that holds the offline keys');
  }
  return t.remote;
}

function metadataOf<K extends MetadataKind.Root | MetadataKind.Targets>(kind: K, what: string, v: unknown, missing?: string[]): (K extends MetadataKind.Root ? Metadata<Root> : Metadata<Targets>) | null {
  if (v === null || v === undefined) return null;
  // `{metadata, ...}`, or the metadata itself; an item described (a version) without it is missing.
  const json = (typeof v === 'object' && v !== null && 'metadata' in v ? (v as { metadata: unknown }).metadata : typeof v === 'object' && v !== null && !('signed' in v) ? undefined : v) as unknown;
  if (json === undefined && missing) missing.push(what);
  if (json === null || json === undefined) return null;
  const parsed = typeof json === 'string' ? (JSON.parse(json) as unknown) : json;
  try {
    return Metadata.fromJSON(kind as MetadataKind.Root, parsed as Parameters<typeof Metadata.fromJSON>[1]) as never;
  } catch (err) {
    throw new StewardError('CONTROL_PLANE_REFUSED', `the server's trust status holds ${what} that is not TUF ${kind} metadata: ${(err as Error).message}`, { cause: err });
  }
}

// The server's trust status, its metadata parsed.
export function readStatus(raw: unknown): TrustStatus {
  const s = (raw ?? {}) as Record<string, unknown>;
  const pending = (s['pending'] ?? {}) as Record<string, unknown>;
  // `delegations` as agreed; `apps` as the server names them.
  const list = s['delegations'] ?? s['apps'];
  const delegations = Array.isArray(list) ? (list as Array<Record<string, unknown>>) : [];
  const missing: string[] = [];
  return {
    root: metadataOf(MetadataKind.Root, 'root.metadata', s['root'], missing),
    targets: metadataOf(MetadataKind.Targets, 'targets.metadata', s['targets'], missing),
    pending: { root: metadataOf(MetadataKind.Root, 'pending.root.metadata', pending['root'], missing), targets: metadataOf(MetadataKind.Targets, 'pending.targets.metadata', pending['targets'], missing) },
    delegations: delegations.map((d) => {
      const app = String(d['app']);
      const has = 'metadata' in d;
      if (!has && d['version'] !== null && d['version'] !== undefined) missing.push(`the metadata of ${app}'s delegated targets`);
      return { app, metadata: has ? metadataOf(MetadataKind.Targets, `the delegated targets of ${app}`, d['metadata'] ?? null) : null };
    }),
    missing,
    raw: s,
  };
}

// Refuses to go on when the server described metadata it did not send: what is signed here is
// built from those bytes, never from a summary of them.
export function needMetadata(status: TrustStatus, what: string): void {
  if (status.missing.length === 0) return;
  throw new StewardError(
    'CONTROL_PLANE_REFUSED',
    `cannot ${what}: the server's trust status (GET ${TRUST_ROUTE}) describes ${status.missing.join(', ')} without the metadata itself, which this command signs or builds on here; the steward-control at --server must send each item's metadata (its JSON, as \`metadata\`)`,
  );
}

function keyOf(role: string, v: unknown): Key {
  const whole = (typeof v === 'object' && v !== null && 'key' in v ? (v as { key: unknown }).key : v) as Record<string, unknown> | undefined;
  // The key object alone: a `keyid` beside it would change the id computed over it.
  const json = whole && { keytype: whole['keytype'], scheme: whole['scheme'], keyval: whole['keyval'] };
  try {
    const k = Key.fromJSON('', json as Parameters<typeof Key.fromJSON>[1]);
    // Labelled with its own id, whatever the server said.
    return Key.fromJSON(tufKeyIdOfKey(k), json as Parameters<typeof Key.fromJSON>[1]);
  } catch (err) {
    throw new StewardError('CONTROL_PLANE_REFUSED', `the server's online ${role} key is not a TUF key: ${(err as Error).message}`, { cause: err });
  }
}

export class TrustApi {
  constructor(readonly target: RemoteTarget) {}

  async status(): Promise<TrustStatus> {
    return readStatus(await callAdminRoute(this.target, 'GET', TRUST_ROUTE));
  }

  // The status, or null from a steward-control without the trust routes (404 NOT_FOUND there):
  // `release add` then behaves as before trust.
  async statusIfAny(): Promise<TrustStatus | null> {
    try {
      return await this.status();
    } catch (err) {
      if (err instanceof StewardError && (err.code === 'NOT_FOUND' || /answered 404/.test(err.message))) return null;
      throw err;
    }
  }

  // The server's online public keys. A server that makes them once and refuses to answer them
  // again (the server's branch: STATE_INVALID) is answered from `named`, a root that names them
  // (the pending root being replaced), when there is one.
  // With `rotate`, the server's new pending keys for those roles (the same ones when asked again),
  // the current keys for the others; `replace` lets it drop new keys a pending root names.
  async onlineKeys(rotate: string[] = [], named: Metadata<Root> | null = null, replace = false): Promise<OnlineKeys> {
    let a: Record<string, unknown>;
    try {
      a = (await callAdminRoute(this.target, 'POST', `${TRUST_ROUTE}/online-keys`, json(rotate.length ? { rotate, ...(replace ? { replace: true } : {}) } : {}))) as Record<string, unknown>;
    } catch (err) {
      if (!(err instanceof StewardError && err.code === 'STATE_INVALID')) throw err;
      if (named && rotate.length === 0) return onlineKeysOf(named);
      // The server's own refusal of a rotation (one pending already): its words are the reason.
      if (rotate.length && !/online keys exist already/.test(err.message)) throw err;
      throw new StewardError(
        'STATE_INVALID',
        `${rotate.length ? `cannot get new online keys for ${rotate.join(', ')}` : 'cannot get the online public keys'}: the server answered "${err.message}" to POST ${TRUST_ROUTE}/online-keys and its status does not carry the keys; the steward-control at --server must answer its online keys again${rotate.length ? ' and make new ones on request' : ''}`,
        { cause: err },
      );
    }
    const keys = (a['onlineKeys'] ?? a['keys'] ?? a) as Record<string, unknown>;
    return { snapshot: keyOf('snapshot', keys['snapshot']), timestamp: keyOf('timestamp', keys['timestamp']), director: keyOf('director', keys['director']) };
  }

  putPending(role: PendingRole, bytes: Buffer): Promise<unknown> {
    return callAdminRoute(this.target, 'PUT', `${TRUST_ROUTE}/pending/${role}`, bytes);
  }

  postSignatures(role: PendingRole, signatures: Array<{ keyid: string; sig: string }>): Promise<unknown> {
    return callAdminRoute(this.target, 'POST', `${TRUST_ROUTE}/pending/${role}/signatures`, json({ signatures }));
  }

  putApp(app: string, bytes: Buffer): Promise<unknown> {
    return callAdminRoute(this.target, 'PUT', `${TRUST_ROUTE}/apps/${encodeURIComponent(app)}`, bytes);
  }
}

// The online keys a root names: its snapshot and timestamp roles' keys and its director's.
function onlineKeysOf(root: Metadata<Root>): OnlineKeys {
  const r = root.signed;
  const one = (ids: readonly string[] | undefined, role: string) => {
    const k = ids?.length === 1 ? r.keys[ids[0] as string] : undefined;
    if (!k) throw new StewardError('CONTROL_PLANE_REFUSED', `the pending root names no single ${role} key`);
    return k;
  };
  const director = r.unrecognizedFields[DIRECTOR_FIELD] as { keyids?: string[] } | undefined;
  return { snapshot: one(r.roles['snapshot']?.keyIDs, 'snapshot'), timestamp: one(r.roles['timestamp']?.keyIDs, 'timestamp'), director: one(director?.keyids, 'director') };
}

const json = (v: unknown) => Buffer.from(JSON.stringify(v), 'utf8');
