// A real steward-helper on a temp host that trusts a fleet's TUF root (docs/design.md §21), driven
// as the agent drives it: `trust-refresh` over helper.sock with a bundle, `update` with the
// entry's directive and a manifest whose payload is a target of the app's delegation. The
// repository is test/helpers/tuf-repo.ts's, with real releases (tarballs of
// test/fixtures/app-releases.ts) added as targets here.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { TrustBundle } from '../../src/core/control-api.js';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { StewardError } from '../../src/core/errors.js';
import { versionDir } from '../../src/core/paths.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import type { KeyObject } from 'node:crypto';
import type { Metadata, Root } from '@tufjs/models';
import { addReleaseTargets, delegateApp, newAppTargets, rotateRoot } from '../../src/core/trust/build.js';
import { DOMAINS, parsePrivateKey, signEnvelope } from '../../src/platform/keys.js';
import { signDirective } from '../../src/platform/trust/directive.js';
import { signMetadata, tufKeyOf } from '../../src/platform/trust/tuf-keys.js';
import { callHelper } from '../../src/protocol/client.js';
import { helperClient, type HelperClient } from '../../src/protocol/helper-client.js';
import { appRelease } from '../fixtures/app-releases.js';
import { helperStatus } from './helper-status.js';
import { receiptOf, type SignedHost } from './helper-sock-attempts.js';
import { makeReleaseKey, manifestFor, processApp } from './host.js';
import { useHost, type TeardownScope } from './host-fixture.js';
import { readTrustState } from '../../src/helper/trust/tuf-client.js';
import { makeTufRepo, newKey, type TufRepo } from './tuf-repo.js';

const DAY = 86_400_000;
export const NODE_ID = 'node-tuf-1';

export interface TufHost extends SignedHost {
  repo: TufRepo;
  helperSock: HelperClient;
  adminSock: HelperClient;
  // The tarball and the manifest payload bytes of each release added, by version.
  tgz: Map<string, Buffer>;
  manifests: Map<string, Buffer>;
}

// Adds web `version` (a new tarball) to the repository as addRelease does, and remembers its bytes.
export function addWeb(h: TufHost, version: string, opts: Parameters<typeof addRelease>[4] = {}): Buffer {
  const tgz = webRelease(version);
  h.tgz.set(version, tgz);
  const m = addRelease(h.repo, 'web', version, tgz, opts);
  h.manifests.set(version, m);
  return m;
}

// The tarball of web `version` (a process that stays up, no probe).
export function webRelease(version: string): Buffer {
  return appRelease('web', version, 0, { probe: 'none', stableMs: 100 });
}

// Adds `app` `version` to the app's delegation (delegated first when it is not), signed by
// `signers` of its keys (two of three unless given), then publishes a new snapshot and timestamp.
export function addRelease(repo: TufRepo, app: string, version: string, tgz: Buffer, opts: { downgradeBytes?: Buffer; indexBytes?: Buffer; signers?: number; publish?: boolean; url?: string } = {}): Buffer {
  const manifestBytes = canonicalBytes(manifestFor(app, version, tgz, opts.url ? { url: opts.url } : {}));
  if (!repo.keys.apps.has(app)) {
    const keys = [newKey(), newKey(), newKey()];
    repo.keys.apps.set(app, keys);
    repo.targets = delegateApp(repo.targets, app, keys.map(tufKeyOf), 2);
    repo.targets.signatures = {};
    repo.keys.root.slice(0, 2).forEach((k) => signMetadata(repo.targets, k));
    repo.apps.set(app, newAppTargets({ expires: Date.now() + 365 * DAY }));
  }
  const md = addReleaseTargets(repo.apps.get(app)!, { app, version, manifestBytes, ...(opts.downgradeBytes ? { downgradeBytes: opts.downgradeBytes } : {}), ...(opts.indexBytes ? { indexBytes: opts.indexBytes } : {}) });
  repo.keys.apps.get(app)!.slice(0, opts.signers ?? 2).forEach((k) => signMetadata(md, k));
  repo.apps.set(app, md);
  if (opts.publish !== false) repo.publish(Date.now());
  return manifestBytes;
}

// The whole repository as the control plane would send it: every file, base64.
export function bundleOf(repo: TufRepo, pick?: (name: string) => boolean): TrustBundle {
  return { v: 1, files: Object.fromEntries([...repo.files].filter(([n]) => !pick || pick(n)).map(([n, b]) => [n, b.toString('base64')])) };
}

// A host enrolled as NODE_ID whose helper trusts the repository's first root and has refreshed
// from its bundle, with web `first` (default 1.0.0) active through TUF.
export async function tufHost(scope: TeardownScope, opts: { first?: string } = {}): Promise<TufHost> {
  const host = useHost(scope, { apps: { web: processApp() } });
  // A release key trusted for web too: under TUF it is not what vouches (nothing here signs with it).
  const key = makeReleaseKey(host, ['web']);
  mkdirSync(path.dirname(host.paths.nodeState), { recursive: true, mode: 0o755 });
  writeFileSync(host.paths.nodeState, JSON.stringify({ schemaVersion: 1, nodeId: NODE_ID }), { mode: 0o600 });
  const helper = await host.startHelper();
  const repo = makeTufRepo({ releases: [] });
  const helperSock = helperClient((request, o) => callHelper(host.paths.helperSock, request, o));
  const adminSock = helperClient((request, o) => callHelper(host.paths.adminSock, request, o));
  const root = repo.files.get('1.root.json')!;
  const set = await adminSock.trustSetRoot({ upload: root.length }, { upload: { size: root.length, stream: Readable.from([root]) } });
  assert.deepEqual(set, { scheme: 'tuf', rootVersion: 1 });
  const h: TufHost = { host, helper, key, repo, helperSock, adminSock, tgz: new Map(), manifests: new Map() };
  const first = opts.first ?? '1.0.0';
  addWeb(h, first);
  await refresh(h);
  const up = await tufUpdate(h, first, 'run-0.web.1');
  assert.equal('outcome' in up && up.outcome, 'active', JSON.stringify(up));
  return h;
}

// trust-refresh over helper.sock with `bundle` (the repository's files unless given), as upload bytes.
export function refresh(h: TufHost, bundle: TrustBundle = bundleOf(h.repo)) {
  const bytes = Buffer.from(JSON.stringify(bundle));
  return h.helperSock.trustRefresh({ upload: bytes.length }, { upload: { size: bytes.length, stream: Readable.from([bytes]) } });
}

// The envelope the control plane sends for manifest payload bytes: signed by some key (under
// TUF no release key is asked for; this one is not trusted anywhere).
export function envelopeOf(payloadBytes: Buffer): Envelope {
  const k = makeReleaseKey();
  return signEnvelope(DOMAINS.manifest, JSON.parse(payloadBytes.toString('utf8')), parsePrivateKey(k.privatePem));
}

export interface DirectiveOptions {
  nodeId?: string;
  attemptId?: string;
  version?: string;
  issuedAt?: number;
  notAfter?: number;
  omit?: boolean;
}

// update over helper.sock of web `version` for `attemptId`: the manifest of the release added,
// the director's directive for this node and attempt (unless told otherwise), the tarball uploaded.
export function tufUpdate(h: TufHost, version: string, attemptId: string, o: DirectiveOptions & { manifestBytes?: Buffer; tgz?: Buffer; downgrade?: Envelope; indexedManifest?: Envelope; trustFetchFailed?: string } = {}) {
  const tgz = o.tgz ?? h.tgz.get(version);
  assert.ok(tgz, `a tarball of web ${version}`);
  const manifestBytes = o.manifestBytes ?? h.manifests.get(version) ?? canonicalBytes(manifestFor('web', version, tgz));
  const now = Date.now();
  const directive = o.omit
    ? undefined
    : signDirective({ nodeId: o.nodeId ?? NODE_ID, app: 'web', version: o.version ?? version, attemptId: o.attemptId ?? attemptId, issuedAt: o.issuedAt ?? now - 1000, notAfter: o.notAfter ?? now + 3_600_000 }, h.repo.keys.director);
  return h.helperSock.update(
    { app: 'web', version, manifest: envelopeOf(manifestBytes), attemptId, upload: tgz.length, by: 'steward-agent', ...(directive ? { directive } : {}), ...(o.downgrade ? { downgrade: o.downgrade } : {}), ...(o.indexedManifest ? { indexedManifest: o.indexedManifest } : {}), ...(o.trustFetchFailed ? { trustFetchFailed: o.trustFetchFailed } : {}) },
    { upload: { size: tgz.length, stream: Readable.from([tgz]) } },
  );
}

export async function web(h: TufHost): Promise<any> {
  return (await helperStatus(h.host.root)).apps.find((a: { name: string }) => a.name === 'web');
}

// A refusal with `code` (and a message matching `why`).
export function refusedWith(code: string, why?: RegExp) {
  return (err: unknown) => {
    assert.ok(err instanceof StewardError, String(err));
    assert.equal(err.code, code, err.message);
    if (why) assert.match(err.message, why);
    return true;
  };
}

// An update refused with `code`: its refused receipt made, web still on `current`, `version` not staged.
export async function assertUpdateRefused(h: TufHost, p: Promise<unknown>, attemptId: string, code: string, current: string, version: string, why?: RegExp): Promise<void> {
  await assert.rejects(p, refusedWith(code, why));
  const receipt = await receiptOf(h, attemptId);
  assert.deepEqual([receipt.outcome, receipt.reason.code], ['refused', code]);
  const st = await web(h);
  assert.equal(st.current, current, 'nothing changed: current is the old release');
  assert.equal(existsDir(versionDir(h.host.paths, 'web', version)), false, `nothing was staged for ${version}`);
}

const existsDir = (p: string): boolean => existsSync(p);

// What the helper's store trusts now, read from its files.
export async function trustedVersions(h: TufHost): Promise<{ rootVersion?: number; timestampVersion?: number }> {
  const s = await readTrustState(h.host.paths, Date.now());
  return { ...(s.rootVersion !== undefined ? { rootVersion: s.rootVersion } : {}), ...(s.timestampVersion !== undefined ? { timestampVersion: s.timestampVersion } : {}) };
}

// A refresh refused with `code` that leaves what the host trusts as it was.
export async function assertRefreshRefused(h: TufHost, bundle: TrustBundle, code: string, why?: RegExp): Promise<void> {
  const before = await trustedVersions(h);
  await assert.rejects(refresh(h, bundle), refusedWith(code, why));
  assert.deepEqual(await trustedVersions(h), before, 'nothing was trusted from the refused bundle');
}

export const downgradeBytes = (version: string, notAfter = Date.now() + 7 * DAY): Buffer => canonicalBytes({ app: 'web', version, notAfter });

// The next root: new root keys, timestamp or director key when given, signed by the previous
// root's keys and the new ones (or by `signers` alone), put as `<v>.root.json`.
export function rotate(repo: TufRepo, o: { rootKeys?: KeyObject[]; timestamp?: KeyObject; director?: KeyObject; expires?: number; signers?: KeyObject[] } = {}): Metadata<Root> {
  const prev = repo.roots[repo.roots.length - 1]!;
  const next = rotateRoot(prev, {
    expires: o.expires ?? Date.now() + 365 * DAY,
    ...(o.rootKeys ? { rootKeys: o.rootKeys.map(tufKeyOf) } : {}),
    ...(o.timestamp ? { timestampKey: tufKeyOf(o.timestamp) } : {}),
    ...(o.director ? { directorKey: tufKeyOf(o.director) } : {}),
  });
  const signers = o.signers ?? [...new Set([...repo.keys.root, ...(o.rootKeys ?? [])])];
  signers.forEach((k) => signMetadata(next, k));
  if (o.rootKeys) repo.keys.root = o.rootKeys;
  if (o.timestamp) repo.keys.timestamp = o.timestamp;
  if (o.director) repo.keys.director = o.director;
  repo.put(`${next.signed.version}.root.json`, next);
  repo.roots.push(next);
  return next;
}
