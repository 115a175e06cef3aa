import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, type KeyObject } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Metadata, Root, Targets } from '@tufjs/models';
import type { TrustBundle } from '../../src/core/control-api.js';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import { addReleaseTargets, delegateApp, metadataBytes, newAppTargets, newSnapshot, newTimestamp, rotateRoot } from '../../src/core/trust/build.js';
import { readTrustState } from '../../src/helper/trust/tuf-client.js';
import { metadataDir } from '../../src/helper/trust/trust-store.js';
import { DOMAINS, signEnvelope } from '../../src/platform/keys.js';
import { signDirective } from '../../src/platform/trust/directive.js';
import { signMetadata, tufKeyOf } from '../../src/platform/trust/tuf-keys.js';
import { appRelease } from '../fixtures/app-releases.js';
import { startAgentProcess } from '../helpers/agent-process.js';
import { FakeControlPlane } from '../helpers/fake-control-plane.js';
import { helperStatus } from '../helpers/helper-status.js';
import { agentctl, manifestFor, processApp } from '../helpers/host.js';
import { useHost } from '../helpers/host-fixture.js';
import { addRelease, bundleOf, downgradeBytes, envelopeOf } from '../helpers/tuf-host.js';
import { makeTufRepo, newKey } from '../helpers/tuf-repo.js';

// The whole control plane compromised (docs/trust.md, "Who can do what"; docs/design.md §21): the
// attacker holds its database (every published metadata file, the releases, the tarballs) and its
// online keys (snapshot, timestamp, director), and none of the offline ones (root, top-level
// targets, the app's delegation). Against a real helper and agent on a host that installed web
// 1.1.0 legitimately, the hostile control plane answers heartbeats, serves bundles and tarballs it
// forged with those keys, and tries, one case each:
//   1. a release nobody signed (web 9.9.9) in an app.web it signed with the online keys, under a
//      snapshot and timestamp of the stolen keys, with a directive of the stolen director key;
//   2. a top-level targets re-delegating web to the attacker's keys;
//   3. a root 2 signed by the online keys and the attacker's, naming the attacker's root keys;
//   4. a directive to web 1.0.0, signed by the delegation but below the host's floor: with an
//      authorization of the attacker's key, then with a downgrade.json target the attacker put
//      in app.web and re-signed the snapshot over;
//   5. (what works, by design) a directive to web 1.2.0, which the delegation signed: installed.
// Each refusal: the helper refuses the forged bundle (TRUST_SIGNATURE, naming the role a threshold
// of whose keys did not sign: app.web, targets, root), then the update with its reason
// (TRUST_UNSIGNED: no target of the delegation it trusts; DOWNGRADE_REFUSED); a signed `refused` receipt reaches the hostile control plane; `current` stays 1.1.0,
// nothing is staged; the helper's metadata store is byte for byte what it was; the agent goes on
// heartbeating. A stolen control plane picks among signed releases at or above a host's floor;
// it installs nothing else.

const TOKEN = 'stolen-cp-token-0123456789abcdef';
const DAY = 86_400_000;

test('a stolen control plane (database and online keys) installs nothing the offline keys never signed and moves no host below its floor', { timeout: 120_000 }, async (t) => {
  const cp = new FakeControlPlane();
  cp.heartbeatSeconds = 1;
  cp.heartbeatVersions = [1, 2, 3, 4, 5, 6, 7, 8];
  cp.tokens.add(TOKEN);
  const url = await cp.listen();
  t.after(() => cp.stop());

  // The fleet's repository: the delegation of web signed 1.0.0, 1.1.0 and 1.2.0.
  const repo = makeTufRepo({ releases: [] });
  const manifests = new Map<string, Buffer>();
  const release = (version: string) => {
    const tgz = appRelease('web', version, 0, { probe: 'none', stableMs: 100 });
    cp.artifacts.set(`web/${version}.tgz`, tgz);
    return tgz;
  };
  for (const v of ['1.0.0', '1.1.0', '1.2.0']) manifests.set(v, addRelease(repo, 'web', v, release(v), { url: `${url}/v1/artifacts/web/${v}.tgz` }));
  const legit = { bundle: bundleOf(repo), timestampVersion: repo.timestamp.signed.version };
  // What the attacker holds: the database (repo.files, repo.targets, repo.apps, the roots) and
  // these three keys; and keys of their own.
  const stolen = { snapshot: repo.keys.snapshot, timestamp: repo.keys.timestamp, director: repo.keys.director };
  const online = [stolen.snapshot, stolen.timestamp, stolen.director];
  const attacker = [newKey(), newKey(), newKey()];
  // web 9.9.9: the attacker's tarball, its manifest, served as any release.
  const evilManifest = canonicalBytes(manifestFor('web', '9.9.9', release('9.9.9'), { url: `${url}/v1/artifacts/web/9.9.9.tgz` }));

  // The host: enrolled trusting root 1, its agent heartbeating to the hostile control plane.
  const host = useHost(t, { apps: { web: processApp({ stopTimeoutMs: 1000 }) }, controlPlane: { url } });
  await host.startHelper();
  const rootFile = path.join(host.scratch, 'root.json');
  writeFileSync(rootFile, repo.files.get('1.root.json')!);
  const e = await agentctl(host, ['enroll', '--control-plane', url, '--token', TOKEN, '--trust-root', rootFile, '--json']);
  assert.equal(e.code, 0, e.stdout + e.stderr);
  const nodeId: string = e.json.nodeId;
  const agent = startAgentProcess(host);

  const entry = (version: string, attemptId: string, manifestBytes: Buffer, downgrade?: Envelope) => {
    const now = Date.now();
    const directive = signDirective({ nodeId, app: 'web', version, attemptId, issuedAt: now - 1000, notAfter: now + 3_600_000 }, stolen.director);
    return { app: 'web', version, attemptId, manifest: envelopeOf(manifestBytes), directive, ...(downgrade ? { downgrade } : {}) };
  };
  const receiptOf = async (attemptId: string) => {
    await agent.waitFor(`the receipt of ${attemptId}`, () => cp.storedReceipts().some((x) => x.attemptId === attemptId), 30_000);
    return cp.storedReceipts().find((x) => x.attemptId === attemptId)!;
  };
  const webStatus = async () => (await helperStatus(host.root)).apps.find((a: { name: string }) => a.name === 'web');
  const listing = (dir: string) => (existsSync(dir) ? readdirSync(dir).sort() : []);
  const versionsDir = path.join(host.paths.appsDir, 'web/versions');
  const stagingDir = path.join(host.paths.appsDir, 'web/staging');
  // The helper's metadata store: each file's name and sha256.
  const store = () => Object.fromEntries(listing(metadataDir(host.paths)).map((n) => [n, createHash('sha256').update(readFileSync(path.join(metadataDir(host.paths), n))).digest('hex')]));

  // web 1.1.0, installed legitimately: the host's floor.
  cp.trust = { rootVersion: 1, timestampVersion: legit.timestampVersion };
  cp.trustBundle = legit.bundle;
  cp.desired = [entry('1.1.0', 'run-0.web.1', manifests.get('1.1.0')!)];
  const first = await receiptOf('run-0.web.1');
  assert.equal(first.outcome, 'active', JSON.stringify(first));
  assert.deepEqual([(await webStatus())?.current, (await webStatus())?.highestActive], ['1.1.0', '1.1.0']);
  const trusted = await readTrustState(host.paths, Date.now());
  assert.deepEqual([trusted.rootVersion, trusted.timestampVersion], [1, legit.timestampVersion]);
  const stored = store();
  const versionsBefore = listing(versionsDir);

  // The attacker's bundle: the database's files, the forged ones over them, and a new snapshot
  // and timestamp signed by the stolen keys (each bundle one version on from the last).
  let forgedVersions = 0;
  const forge = (o: { root?: Metadata<Root>; targets?: Metadata<Targets>; app?: Metadata<Targets> }): { bundle: TrustBundle; timestampVersion: number } => {
    const files = new Map(repo.files);
    const targets = o.targets ?? repo.targets;
    const app = o.app ?? repo.apps.get('web')!;
    if (o.root) files.set(`${o.root.signed.version}.root.json`, metadataBytes(o.root));
    if (o.targets) files.set(`${targets.signed.version}.targets.json`, metadataBytes(targets));
    if (o.app) files.set(`${app.signed.version}.app.web.json`, metadataBytes(app));
    forgedVersions++;
    const snapshotVersion = repo.snapshot.signed.version + forgedVersions;
    const snapshot = newSnapshot(new Map([['targets', targets.signed.version], ['app.web', app.signed.version]]), snapshotVersion, Date.now());
    signMetadata(snapshot, stolen.snapshot);
    const snapshotBytes = metadataBytes(snapshot);
    files.set(`${snapshotVersion}.snapshot.json`, snapshotBytes);
    const timestampVersion = repo.timestamp.signed.version + forgedVersions;
    const timestamp = newTimestamp(snapshotBytes, snapshotVersion, timestampVersion, Date.now());
    signMetadata(timestamp, stolen.timestamp);
    files.set('timestamp.json', metadataBytes(timestamp));
    return { bundle: { v: 1, files: Object.fromEntries([...files].map(([n, b]) => [n, b.toString('base64')])) }, timestampVersion };
  };
  const signed = <T extends Metadata<Root | Targets>>(md: T, keys: KeyObject[]): T => {
    keys.forEach((k) => signMetadata(md, k));
    return md;
  };

  // One attack: the heartbeat answer offers `offered` (its bundle) and the entry; the refusal is
  // checked as the header says.
  let run = 0;
  const refused = async (what: string, o: { offered?: { bundle: TrustBundle; timestampVersion: number }; unsignedRole?: 'root' | 'targets' | 'app.web'; version: string; manifestBytes: Buffer; downgrade?: Envelope; code: string; why: RegExp }) => {
    const attemptId = `run-${++run}.web.1`;
    const offered = o.offered ?? legit;
    cp.trustBundle = offered.bundle;
    cp.trust = { rootVersion: 1, timestampVersion: offered.timestampVersion };
    cp.desired = [entry(o.version, attemptId, o.manifestBytes, o.downgrade)];
    const receipt = await receiptOf(attemptId);
    assert.deepEqual([receipt.outcome, receipt.reason?.code], ['refused', o.code], `${what}: ${JSON.stringify(receipt)}`);
    assert.match(receipt.reason?.message ?? '', o.why, `${what}: ${receipt.reason?.message}`);
    if (o.offered) {
      // The agent handed the bundle over and the helper refused it (verified; should the
      // helper's bound have answered BUSY, the agent hands it over again 15 s later).
      const line = new RegExp(`trust refresh to root 1 timestamp ${offered.timestampVersion} failed code=TRUST_SIGNATURE: the trust bundle was refused; nothing was trusted from it: .*\\b${o.unsignedRole!.replace('.', '\\.')} was signed by 0/2 keys`);
      await agent.waitFor(`${what}: the helper refused the bundle`, () => line.test(agent.stderr()), 20_000);
    }
    const st = await webStatus();
    assert.deepEqual([st?.current, st?.highestActive], ['1.1.0', '1.1.0'], `${what}: current and the floor unchanged`);
    assert.deepEqual(listing(versionsDir), versionsBefore, `${what}: nothing staged`);
    assert.deepEqual(listing(stagingDir), [], `${what}: no staging left`);
    const now = await readTrustState(host.paths, Date.now());
    assert.deepEqual([now.rootVersion, now.timestampVersion], [1, legit.timestampVersion], `${what}: the trusted versions unchanged`);
    assert.deepEqual(store(), stored, `${what}: nothing of the forged metadata stored`);
    // The agent goes on heartbeating (1 s apart) after the heartbeat that carried the receipt.
    const n = cp.heartbeats.length;
    await agent.waitFor(`${what}: a heartbeat after the refusal`, () => cp.heartbeats.length > n, 10_000);
  };

  // 1. web 9.9.9 in an app.web signed by the online keys: no delegation key signed it. (An
  // unsigned one is the same refusal; it is left out to keep to the helper's bound on bundles:
  // 4 verified at once and one more every 15 s, src/helper/trust/refresh-gate.ts. This file hands
  // over five: the fleet's, cases 1, 2, 3 and the second of 4.)
  const evilApp = () => addReleaseTargets(repo.apps.get('web')!, { app: 'web', version: '9.9.9', manifestBytes: evilManifest });
  const unsigned = /web\/9\.9\.9\/manifest\.json is not a target the app\.web delegation signs/;
  await refused('9.9.9 in an app.web the online keys signed', { offered: forge({ app: signed(evilApp(), online) }), unsignedRole: 'app.web', version: '9.9.9', manifestBytes: evilManifest, code: 'TRUST_UNSIGNED', why: unsigned });

  // 2. The top-level targets re-delegating web to the attacker's keys (signed by them and the
  // online keys, not the root's), and 9.9.9 signed by the attacker's keys under it.
  const redelegated = signed(delegateApp(repo.targets, 'web', attacker.map(tufKeyOf), 2), [...attacker, ...online]);
  const theirs = signed(addReleaseTargets(newAppTargets({ expires: Date.now() + 365 * DAY, version: repo.apps.get('web')!.signed.version }), { app: 'web', version: '9.9.9', manifestBytes: evilManifest }), attacker.slice(0, 2));
  await refused('web re-delegated to the attacker', { offered: forge({ targets: redelegated, app: theirs }), unsignedRole: 'targets', version: '9.9.9', manifestBytes: evilManifest, code: 'TRUST_UNSIGNED', why: unsigned });

  // 3. A root 2 naming the attacker's keys as root and targets keys, signed by those and the
  // online keys; under it, the re-delegation signed by the attacker's keys alone.
  const root2 = signed(rotateRoot(repo.roots[0]!, { rootKeys: attacker.map(tufKeyOf), targetsKeys: attacker.map(tufKeyOf), expires: Date.now() + 365 * DAY }), [...attacker, ...online]);
  const theirTargets = signed(delegateApp(repo.targets, 'web', attacker.map(tufKeyOf), 2), attacker);
  await refused('a root 2 of the attacker', { offered: forge({ root: root2, targets: theirTargets, app: theirs }), unsignedRole: 'root', version: '9.9.9', manifestBytes: evilManifest, code: 'TRUST_UNSIGNED', why: unsigned });

  // 4. web 1.0.0, signed by the delegation but below the floor (1.1.0): with an authorization of
  // the attacker's key, then with a downgrade.json target the attacker added to app.web (signed by
  // the online keys, not the delegation) under a snapshot they re-signed.
  const down = downgradeBytes('1.0.0');
  const authorization = signEnvelope(DOMAINS.downgrade, JSON.parse(down.toString('utf8')), attacker[0]!);
  const belowFloor = /signs no web\/1\.0\.0\/downgrade\.json/;
  await refused('1.0.0 below the floor', { version: '1.0.0', manifestBytes: manifests.get('1.0.0')!, downgrade: authorization, code: 'DOWNGRADE_REFUSED', why: belowFloor });
  const withDowngrade = signed(addReleaseTargets(repo.apps.get('web')!, { app: 'web', version: '1.0.0', manifestBytes: manifests.get('1.0.0')!, downgradeBytes: down }), online);
  await refused('1.0.0 with a forged downgrade.json', { offered: forge({ app: withDowngrade }), unsignedRole: 'app.web', version: '1.0.0', manifestBytes: manifests.get('1.0.0')!, downgrade: authorization, code: 'DOWNGRADE_REFUSED', why: belowFloor });

  // 5. What a stolen control plane can do: point the host at a release the delegation signed, at
  // or above its floor. web 1.2.0 installs, authorized by the delegation's target.
  cp.trustBundle = legit.bundle;
  cp.trust = { rootVersion: 1, timestampVersion: legit.timestampVersion };
  cp.desired = [entry('1.2.0', 'run-9.web.1', manifests.get('1.2.0')!)];
  const up = await receiptOf('run-9.web.1');
  assert.equal(up.outcome, 'active', JSON.stringify(up));
  const st = await webStatus();
  assert.deepEqual([st?.current, st?.highestActive], ['1.2.0', '1.2.0']);
  assert.deepEqual(store(), stored, 'the metadata the host trusts is still the fleet’s');
});
