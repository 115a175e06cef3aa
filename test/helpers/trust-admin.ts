// Driving the admin API of a fleet's TUF repository (docs/design.md §21.2) as an operator's machine
// would: offline keys made in the test, metadata built with src/core/trust, signatures made here and
// sent to the control plane, and its bundle verified with tuf-js's own Updater.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { KeyObject } from 'node:crypto';
import { Key, Metadata, MetadataKind, type Root, type Snapshot, type Targets, type Timestamp } from '@tufjs/models';
import { Updater } from 'tuf-js';
import { addReleaseTargets, delegateApp, metadataBytes, newAppTargets, newRoot, newTopTargets } from '../../src/core/trust/build.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { makeOnlineKeys, putAppTargets, putPending } from '../../src/control/trust/repository.js';
import { signMetadata, tufKeyIdOf, tufKeyOf } from '../../src/platform/trust/tuf-keys.js';
import { manifestBytesOf, newKey } from './tuf-repo.js';
import { adminCall, type AdminAnswer } from './admin-client.js';
import { MemoryFetcher, METADATA_URL } from './tuf-fetcher.js';
import { scratchDir } from './scratch.js';
import { waitAuth } from './wait-client.js';

type AnyMetadata = Metadata<Root | Targets | Snapshot | Timestamp>;
type JsonObject = Parameters<typeof Metadata.fromJSON>[1];

export interface OnlineKeysAnswer {
  snapshot: { keyid: string; key: Record<string, unknown> };
  timestamp: { keyid: string; key: Record<string, unknown> };
  director: { keyid: string; key: Record<string, unknown> };
}

export const keyOfJson = (k: { keyid: string; key: Record<string, unknown> }): Key => Key.fromJSON(k.keyid, k.key as JsonObject);

// The same metadata at another version (the builders bump it at every change).
export function atVersion<T extends AnyMetadata>(md: T, version: number): T {
  const json = md.toJSON() as { signed: Record<string, unknown>; signatures: unknown[] };
  return Metadata.fromJSON(md.signed.type as MetadataKind.Root, { ...json, signed: { ...json.signed, version }, signatures: [] } as JsonObject) as unknown as T;
}

// `md` signed by `keys`, as a fresh copy (the original keeps its signatures).
export function signedBy<T extends AnyMetadata>(md: T, keys: readonly KeyObject[]): T {
  const copy = Metadata.fromJSON(md.signed.type as MetadataKind.Root, md.toJSON() as JsonObject) as unknown as T;
  for (const k of keys) signMetadata(copy, k);
  return copy;
}

// The {keyid, sig} each key makes over `md`.
export function signaturesOf(md: AnyMetadata, keys: readonly KeyObject[]): Array<{ keyid: string; sig: string }> {
  const s = signedBy(atVersion(md, md.signed.version), keys);
  return keys.map((k) => ({ keyid: tufKeyIdOf(k), sig: s.signatures[tufKeyIdOf(k)]!.sig }));
}

export const bytesOf = (md: AnyMetadata): Buffer => metadataBytes(md);

export function putMetadata(url: string, token: string, route: string, md: AnyMetadata): Promise<AdminAnswer> {
  return adminCall(url, route, { method: 'PUT', token, raw: bytesOf(md), headers: { 'content-type': 'application/json' } });
}

export function postSignatures(url: string, token: string, role: 'root' | 'targets', signatures: Array<{ keyid: string; sig: string }>): Promise<AdminAnswer> {
  return adminCall(url, `/v1/admin/trust/pending/${role}/signatures`, { method: 'POST', token, json: { signatures } });
}

// GET /v1/trust/bundle?root=N as a node, with its Steward-Node credential.
export function getBundle(url: string, nodeId: string, key: KeyObject, now: number, query: string): Promise<AdminAnswer> {
  return adminCall(url, `/v1/trust/bundle${query}`, { method: 'GET', headers: { authorization: waitAuth(nodeId, key, now) } });
}

// The bundle's files as bytes, by name.
export function filesOf(bundle: { files: Record<string, string> }): Map<string, Buffer> {
  return new Map(Object.entries(bundle.files).map(([n, b]) => [n, Buffer.from(b, 'base64')]));
}

// A tuf-js Updater trusting `trustedRoot` (its bytes) over `files` alone, as a host's helper runs it.
export function updaterOver(trustedRoot: Buffer, files: ReadonlyMap<string, Buffer>): Updater {
  const metadataDir = path.join(scratchDir('steward-trust-client-'), 'metadata');
  mkdirSync(metadataDir, { recursive: true });
  writeFileSync(path.join(metadataDir, 'root.json'), trustedRoot);
  return new Updater({ metadataDir, metadataBaseUrl: METADATA_URL, fetcher: new MemoryFetcher(files) });
}


// A fleet's repository made through the store (as the admin API would): the online keys, root 1
// (three offline keys, threshold 2), the top-level targets delegating `web` (three keys,
// threshold 2), and web's targets naming its releases. The offline keys come back.
export interface SeededRepository {
  rootKeys: KeyObject[];
  webKeys: KeyObject[];
  root: Metadata<Root>;
  targets: Metadata<Targets>;
  web: Metadata<Targets>;
}

export async function seedRepository(store: ControlStore, now: number, releases: string[] = ['1.0.0']): Promise<SeededRepository> {
  const rootKeys = [newKey(), newKey(), newKey()];
  const webKeys = [newKey(), newKey(), newKey()];
  return store.write(async (tx) => {
    const online = await makeOnlineKeys(tx);
    const root = signedBy(newRoot({ rootKeys: rootKeys.map(tufKeyOf), threshold: 2, snapshotKey: online.snapshot.tuf, timestampKey: online.timestamp.tuf, directorKey: online.director.tuf, expires: now + 365 * DAY }), rootKeys.slice(0, 2));
    await putPending(tx, 'root', bytesOf(root).toString('utf8'), 'test');
    const targets = signedBy(atVersion(delegateApp(newTopTargets({ expires: now + 365 * DAY }), 'web', webKeys.map(tufKeyOf), 2), 1), rootKeys.slice(0, 2));
    await putPending(tx, 'targets', bytesOf(targets).toString('utf8'), 'test');
    let web = newAppTargets({ expires: now + 365 * DAY });
    for (const version of releases) web = addReleaseTargets(web, { app: 'web', version, manifestBytes: manifestBytesOf('web', version, now) });
    web = signedBy(web, webKeys.slice(0, 2));
    await putAppTargets(tx, 'web', bytesOf(web).toString('utf8'));
    return { rootKeys, webKeys, root, targets, web };
  });
}

const DAY = 86_400_000;
