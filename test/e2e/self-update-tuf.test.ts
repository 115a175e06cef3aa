// steward's own self-update on a host whose scheme is `tuf` (docs/design.md §14, §21; docs/self-update.md,
// "Under TUF"): the real launcher starting real helpers under a root prefix, as
// test/e2e/self-update-trial.test.ts does, on a host enrolled as a node that trusts a fleet's TUF
// root (test/helpers/tuf-repo.ts) and has no release key for steward. Every update is asked for
// over helper.sock as the agent relays a rollout's: the tarball uploaded, the manifest envelope
// the control plane keeps, and the director's directive for this node, app, version and attempt.
// A release of steward that the `app.steward` delegation signs and the director directs runs
// once on trial and commits; one that fails its trial is reverted and quarantined. One that is no
// target of the delegation (signed only by a release key the host even trusts, as a control plane
// whose database was written to would send it) is refused TRUST_UNSIGNED, one with no directive
// TRUST_NOT_DIRECTED, and one below steward's floor DOWNGRADE_REFUSED with or without the
// delegation's downgrade.json: each with a signed `refused` receipt, nothing staged, no
// candidate, and the running steward unchanged. An apt upgrade's package trial (the package's own
// tree, apt's) still commits on such a host.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { ChildProcess } from 'node:child_process';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { StewardError } from '../../src/core/errors.js';
import { trustedKeysFor, versionDir } from '../../src/core/paths.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import { DOMAINS, parsePrivateKey, signEnvelope } from '../../src/platform/keys.js';
import { signDirective } from '../../src/platform/trust/directive.js';
import { callHelper } from '../../src/protocol/client.js';
import { helperClient } from '../../src/protocol/helper-client.js';
import { helperReceipts, helperStatus } from '../helpers/helper-status.js';
import { cleanedUpAfter, currentOf, exited, makeSelfHost, ranVersions, startLauncher, stewardRelease, upgradePackage, waitReady, type SelfBehaviour, type SelfHost } from '../helpers/self-host.js';
import { addRelease, bundleOf, envelopeOf } from '../helpers/tuf-host.js';
import { makeTufRepo, type TufRepo } from '../helpers/tuf-repo.js';
import { skipUnlessCI } from '../helpers/skip.js';

const IS_ROOT = process.getuid?.() === 0;
const NODE_ID = 'node-self-tuf';
const { children, hosts } = cleanedUpAfter();

const sockOf = (h: SelfHost, which: 'helperSock' | 'adminSock') => helperClient((request, o) => callHelper(h.paths[which], request, o));

interface Release {
  tgz: Buffer;
  // The manifest signed by the host's steward release key (what a host on `keys` takes).
  keySigned: Envelope;
}

async function release(h: SelfHost, version: string, behaviour: SelfBehaviour = 'good'): Promise<Release> {
  const r = await stewardRelease(h, version, behaviour);
  return { tgz: readFileSync(r.tgz), keySigned: JSON.parse(readFileSync(r.manifest, 'utf8')) as Envelope };
}

// Publishes `version` as a target of the app.steward delegation (delegated at the first), and
// hands the host the repository as the agent does (`trust-refresh` over helper.sock).
async function publish(h: SelfHost, repo: TufRepo, version: string, rel: Release, opts: { downgradeBytes?: Buffer } = {}): Promise<Buffer> {
  const manifestBytes = addRelease(repo, 'steward', version, rel.tgz, opts);
  const bytes = Buffer.from(JSON.stringify(bundleOf(repo)));
  await sockOf(h, 'helperSock').trustRefresh({ upload: bytes.length }, { upload: { size: bytes.length, stream: Readable.from([bytes]) } });
  return manifestBytes;
}

// `update steward <version>` over helper.sock as the agent relays it.
function relayUpdate(h: SelfHost, repo: TufRepo, version: string, attemptId: string, rel: Release, o: { manifest: Envelope; directed?: boolean; downgrade?: Envelope }) {
  const now = Date.now();
  const directive = o.directed === false ? undefined : signDirective({ nodeId: NODE_ID, app: 'steward', version, attemptId, issuedAt: now - 1000, notAfter: now + 3_600_000 }, repo.keys.director);
  return sockOf(h, 'helperSock').update(
    { app: 'steward', version, manifest: o.manifest, attemptId, upload: rel.tgz.length, by: 'steward-agent', ...(directive ? { directive } : {}), ...(o.downgrade ? { downgrade: o.downgrade } : {}) },
    { upload: { size: rel.tgz.length, stream: Readable.from([rel.tgz]) } },
  );
}

async function steward(h: SelfHost): Promise<any> {
  return (await helperStatus(h.root)).apps.find((a: any) => a.name === 'steward');
}

// The signed receipt of `attemptId` (each verified against helper.pub).
async function receiptOf(h: SelfHost, attemptId: string): Promise<any> {
  const receipts = await helperReceipts(h.root, 'steward');
  assert.deepEqual(receipts.filter((r) => !r.verified), [], 'every receipt verifies against helper.pub');
  const mine = receipts.map((r: any) => r.payload ?? r).filter((p: any) => p.attemptId === attemptId);
  assert.equal(mine.length, 1, `one receipt of ${attemptId}: ${JSON.stringify(receipts.map((r: any) => r.payload ?? r))}`);
  return mine[0];
}

// Refused with `code` before anything happened: a signed `refused` receipt, nothing of `version`
// staged, no candidate for the launcher, and the helper `running` still up on `version`-less code.
async function assertRefused(h: SelfHost, running: ChildProcess, p: Promise<unknown>, attemptId: string, version: string, code: string, why: RegExp, still: { self: string; current: string | null }): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof StewardError, String(err));
    assert.equal(err.code, code, err.message);
    assert.match(err.message, why);
    return true;
  });
  const receipt = await receiptOf(h, attemptId);
  assert.deepEqual([receipt.outcome, receipt.reason?.code, receipt.targetVersion], ['refused', code, version], JSON.stringify(receipt));
  assert.equal(existsSync(versionDir(h.paths, 'steward', version)), false, `nothing of steward ${version} was staged`);
  assert.equal(existsSync(path.join(h.paths.selfDir, 'candidate')), false, 'no candidate for the launcher');
  assert.equal(running.exitCode ?? running.signalCode, null, 'the running helper was not handed over');
  const s = await steward(h);
  assert.deepEqual([s.self.version, s.current], [still.self, still.current]);
  assert.ok(!ranVersions(h).includes(version), `steward ${version} never ran`);
}

test('on a tuf host, steward releases of the app.steward delegation that the director directs go through the trial (commit, revert); others are refused TRUST_*, below the floor DOWNGRADE_REFUSED, steward unchanged', { timeout: 180_000 }, async (t) => {
  if (!IS_ROOT) return skipUnlessCI(t, 'needs root: the helper binds its sockets for group steward');
  const t0 = Date.now();
  const h = await makeSelfHost('1.0.0', { apps: { steward: { runner: 'self', stableMs: 300 } } });
  hosts.push(h);
  const launch = () => {
    const c = startLauncher(h);
    children.push(c);
    return c;
  };
  // Enrolled as a node (a directive is for a node), with no agent app: the trial's probe is its
  // own (the agent's round trip is the same under either scheme, docs/self-update.md).
  mkdirSync(path.dirname(h.paths.nodeState), { recursive: true, mode: 0o755 });
  writeFileSync(h.paths.nodeState, JSON.stringify({ schemaVersion: 1, nodeId: NODE_ID }), { mode: 0o600 });
  let helper = launch();
  assert.equal((await waitReady(h, helper)).apps.find((a: any) => a.name === 'steward').self.decision, 'package');
  const repo = makeTufRepo({ releases: [] });
  const root = repo.files.get('1.root.json')!;
  assert.deepEqual(await sockOf(h, 'adminSock').trustSetRoot({ upload: root.length }, { upload: { size: root.length, stream: Readable.from([root]) } }), { scheme: 'tuf', rootVersion: 1 });

  // (b) While the host still trusts a release key for steward: a release signed by it, but no
  // target of app.steward (what a control plane whose database was written to sends), directed.
  const rel21 = await release(h, '2.1.0');
  await publish(h, repo, '2.0.0', await release(h, '2.0.0')); // app.steward delegated, another version signed
  await assertRefused(h, helper, relayUpdate(h, repo, '2.1.0', 'run-1.steward.1', rel21, { manifest: rel21.keySigned }), 'run-1.steward.1', '2.1.0', 'TRUST_UNSIGNED', /steward\/2\.1\.0\/manifest\.json is not a target the app\.steward delegation signs/, { self: '1.0.0', current: null });
  // A stage over helper.sock (nothing activated) is held to the delegation as well.
  await assert.rejects(
    sockOf(h, 'helperSock').stage({ app: 'steward', version: '2.1.0', manifest: rel21.keySigned, upload: rel21.tgz.length }, { upload: { size: rel21.tgz.length, stream: Readable.from([rel21.tgz]) } }),
    (err: unknown) => err instanceof StewardError && err.code === 'TRUST_UNSIGNED',
  );
  assert.equal(existsSync(versionDir(h.paths, 'steward', '2.1.0')), false);

  // From here on the host trusts no release key for steward: the delegation alone vouches.
  rmSync(trustedKeysFor(h.paths, 'steward'), { recursive: true, force: true });
  const rel2 = await release(h, '2.0.0');
  const m2 = await publish(h, repo, '2.0.0', rel2);
  // A target of app.steward whose bytes the control plane swapped (its tarball's other bytes).
  const forged = envelopeOf(canonicalBytes({ ...JSON.parse(m2.toString('utf8')), size: rel2.tgz.length + 1 }));
  await assertRefused(h, helper, relayUpdate(h, repo, '2.0.0', 'run-2.steward.1', rel2, { manifest: forged }), 'run-2.steward.1', '2.0.0', 'TRUST_UNSIGNED', /is not the target steward\/2\.0\.0\/manifest\.json the app\.steward delegation signs/, { self: '1.0.0', current: null });
  // The delegation's release, with no directive.
  await assertRefused(h, helper, relayUpdate(h, repo, '2.0.0', 'run-2.steward.2', rel2, { manifest: envelopeOf(m2), directed: false }), 'run-2.steward.2', '2.0.0', 'TRUST_NOT_DIRECTED', /none came with the request/, { self: '1.0.0', current: null });
  console.log(`refusals on the package: ${Date.now() - t0} ms`);

  // (a) The delegation's release, directed: handed over, run once on trial, committed.
  const up = await relayUpdate(h, repo, '2.0.0', 'run-3.steward.1', rel2, { manifest: envelopeOf(m2) });
  assert.equal('accepted' in up && up.accepted, true, JSON.stringify(up));
  assert.equal(await exited(helper), 0, 'the restart the handover asked for ends the old helper');
  assert.match(readFileSync(path.join(h.paths.selfDir, 'candidate'), 'utf8'), /"version":"2\.0\.0"/);
  helper = launch();
  await waitReady(h, helper);
  let s = await steward(h);
  assert.deepEqual([s.self.version, s.self.decision, s.current, s.highestActive], ['2.0.0', 'trial', '2.0.0', '2.0.0'], JSON.stringify(s.self));
  assert.equal(currentOf(h), 'versions/2.0.0');
  assert.deepEqual([(await receiptOf(h, 'run-3.steward.1')).outcome], ['active']);
  assert.equal((await helperStatus(h.root)).trust?.scheme, 'tuf', 'the new helper reads the same trust store');
  console.log(`trial committed: ${Date.now() - t0} ms`);

  // (c) Below steward's floor (2.0.0 runs and was active), directed and a target of app.steward:
  // refused, and the delegation's downgrade.json changes nothing (steward goes back through its
  // package or an admin's rollback, never over helper.sock).
  const rel15 = await release(h, '1.5.0');
  const m15 = await publish(h, repo, '1.5.0', rel15);
  await assertRefused(h, helper, relayUpdate(h, repo, '1.5.0', 'run-4.steward.1', rel15, { manifest: envelopeOf(m15) }), 'run-4.steward.1', '1.5.0', 'DOWNGRADE_REFUSED', /below/, { self: '2.0.0', current: '2.0.0' });
  const dg = canonicalBytes({ app: 'steward', version: '1.5.0', notAfter: Date.now() + 86_400_000 });
  const m15d = await publish(h, repo, '1.5.0', rel15, { downgradeBytes: dg });
  const dgEnvelope = { ...signEnvelope(DOMAINS.downgrade, JSON.parse(dg.toString('utf8')), parsePrivateKey(h.key.privatePem)), payload: dg.toString('base64') };
  await assertRefused(h, helper, relayUpdate(h, repo, '1.5.0', 'run-4.steward.2', rel15, { manifest: envelopeOf(m15d), downgrade: dgEnvelope }), 'run-4.steward.2', '1.5.0', 'DOWNGRADE_REFUSED', /below/, { self: '2.0.0', current: '2.0.0' });

  // A failed trial of the delegation's release: run once, reverted, quarantined, with a receipt.
  const rel3 = await release(h, '3.0.0', 'exit');
  const m3 = await publish(h, repo, '3.0.0', rel3);
  const up3 = await relayUpdate(h, repo, '3.0.0', 'run-5.steward.1', rel3, { manifest: envelopeOf(m3) });
  assert.equal('accepted' in up3 && up3.accepted, true, JSON.stringify(up3));
  assert.equal(await exited(helper), 0);
  const candidate = launch();
  assert.notEqual(await exited(candidate), 0, 'the candidate never gets ready');
  helper = launch();
  await waitReady(h, helper);
  s = await steward(h);
  assert.deepEqual([s.self.version, s.self.decision, s.current, s.quarantined], ['2.0.0', 'current', '2.0.0', ['3.0.0']], JSON.stringify(s));
  const r3 = await receiptOf(h, 'run-5.steward.1');
  assert.deepEqual([r3.outcome, r3.reason?.code], ['rolled-back', 'REPLACEMENT_UNHEALTHY']);
  assert.deepEqual(ranVersions(h).filter((v) => v === '3.0.0'), ['3.0.0'], 'the failed candidate ran once');
  helper.kill('SIGTERM');
  await exited(helper);

  // An apt upgrade to a newer package: its trial stages the package's own tree (apt's, root's),
  // which TUF has no say in, and commits it on this host with no release key for steward.
  await upgradePackage(h, '4.0.0');
  helper = launch();
  await waitReady(h, helper);
  s = await steward(h);
  assert.deepEqual([s.self.version, s.self.decision, s.current], ['4.0.0', 'trial', '4.0.0'], JSON.stringify(s.self));
  assert.equal(currentOf(h), 'versions/4.0.0');
  helper.kill('SIGTERM');
  await exited(helper);
  console.log(`in all: ${Date.now() - t0} ms`);
});
