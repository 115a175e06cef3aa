// A whole signed TUF repository of a fleet (docs/design.md §21.1), built with src/core/trust and
// written as a client fetches it with consistent snapshots: `<v>.root.json` for every root
// version, `timestamp.json`, `<v>.snapshot.json`, `<v>.targets.json`, `<v>.app.<name>.json`.
// The keys come back with it, so a test can re-sign, rotate or tamper.
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Metadata, Root, Snapshot, Targets, Timestamp } from '@tufjs/models';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { addReleaseTargets, delegateApp, metadataBytes, newAppTargets, newRoot, newSnapshot, newTimestamp, newTopTargets } from '../../src/core/trust/build.js';
import { delegatedRoleName } from '../../src/core/trust/roles.js';
import { signMetadata, tufKeyOf } from '../../src/platform/trust/tuf-keys.js';
import { scratchDir } from './scratch.js';

const DAY = 86_400_000;

export const newKey = (): KeyObject => generateKeyPairSync('ed25519').privateKey;

export interface TufRepoKeys {
  root: KeyObject[];
  snapshot: KeyObject;
  timestamp: KeyObject;
  director: KeyObject;
  // By app name.
  apps: Map<string, KeyObject[]>;
}

export interface TufRepo {
  dir: string;
  keys: TufRepoKeys;
  roots: Array<Metadata<Root>>;
  targets: Metadata<Targets>;
  apps: Map<string, Metadata<Targets>>;
  snapshot: Metadata<Snapshot>;
  timestamp: Metadata<Timestamp>;
  // The files as served, by name.
  files: Map<string, Buffer>;
  // Writes `md` under `name` (in `files` and on disk).
  put(name: string, md: Metadata<Root | Targets | Snapshot | Timestamp>): Buffer;
  // A new snapshot and timestamp naming the current targets, signed by the online keys, published.
  publish(now?: number): void;
}

// A release's manifest payload bytes (canonical JSON, docs/design.md §6) for the fixture.
export function manifestBytesOf(app: string, version: string, now = Date.now()): Buffer {
  return canonicalBytes({ name: app, version, url: `https://example.test/${app}-${version}.tgz`, size: 1234, integrity: `sha512-${'A'.repeat(86)}==`, expires: now + 30 * DAY });
}

export interface TufRepoOptions {
  // The apps delegated, each with 3 keys of threshold 2, and the releases added (default web 1.0.0).
  releases?: Array<{ app: string; version: string }>;
  now?: number;
}

export function makeTufRepo(opts: TufRepoOptions = {}): TufRepo {
  const now = opts.now ?? Date.now();
  const releases = opts.releases ?? [{ app: 'web', version: '1.0.0' }];
  const dir = scratchDir('steward-tuf-');
  mkdirSync(dir, { recursive: true });
  const keys: TufRepoKeys = { root: [newKey(), newKey(), newKey()], snapshot: newKey(), timestamp: newKey(), director: newKey(), apps: new Map() };
  const files = new Map<string, Buffer>();
  const put = (name: string, md: Metadata<Root | Targets | Snapshot | Timestamp>): Buffer => {
    const bytes = metadataBytes(md);
    files.set(name, bytes);
    writeFileSync(path.join(dir, name), bytes);
    return bytes;
  };

  const root = newRoot({
    rootKeys: keys.root.map(tufKeyOf),
    threshold: 2,
    snapshotKey: tufKeyOf(keys.snapshot),
    timestampKey: tufKeyOf(keys.timestamp),
    directorKey: tufKeyOf(keys.director),
    expires: now + 365 * DAY,
  });
  keys.root.forEach((k) => signMetadata(root, k));
  put('1.root.json', root);

  let targets = newTopTargets({ expires: now + 365 * DAY });
  const apps = new Map<string, Metadata<Targets>>();
  for (const { app, version } of releases) {
    if (!keys.apps.has(app)) {
      const appKeys = [newKey(), newKey(), newKey()];
      keys.apps.set(app, appKeys);
      targets = delegateApp(targets, app, appKeys.map(tufKeyOf), 2);
      apps.set(app, newAppTargets({ expires: now + 365 * DAY }));
    }
    apps.set(app, addReleaseTargets(apps.get(app)!, { app, version, manifestBytes: manifestBytesOf(app, version, now) }));
  }
  // The targets are signed by the root's keys (threshold 2), each app's by two of its three keys.
  keys.root.slice(0, 2).forEach((k) => signMetadata(targets, k));
  for (const [app, md] of apps) keys.apps.get(app)!.slice(0, 2).forEach((k) => signMetadata(md, k));

  const repo: TufRepo = {
    dir,
    keys,
    roots: [root],
    targets,
    apps,
    snapshot: undefined as unknown as Metadata<Snapshot>,
    timestamp: undefined as unknown as Metadata<Timestamp>,
    files,
    put,
    publish(at = now) {
      put(`${repo.targets.signed.version}.targets.json`, repo.targets);
      const versions = new Map([['targets', repo.targets.signed.version]]);
      for (const [app, md] of repo.apps) {
        const role = delegatedRoleName(app);
        versions.set(role, md.signed.version);
        put(`${md.signed.version}.${role}.json`, md);
      }
      const snapshotVersion = (repo.snapshot?.signed.version ?? 0) + 1;
      repo.snapshot = newSnapshot(versions, snapshotVersion, at);
      signMetadata(repo.snapshot, keys.snapshot);
      const snapshotBytes = put(`${snapshotVersion}.snapshot.json`, repo.snapshot);
      repo.timestamp = newTimestamp(snapshotBytes, snapshotVersion, (repo.timestamp?.signed.version ?? 0) + 1, at);
      signMetadata(repo.timestamp, keys.timestamp);
      put('timestamp.json', repo.timestamp);
    },
  };
  repo.publish();
  return repo;
}
