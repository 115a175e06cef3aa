// A real steward-helper and a real steward-agent on a temp host, the agent heartbeating to a
// FakeControlPlane the test scripts as a hostile control plane (docs/design.md §21.2): its heartbeat
// answers offer TUF versions (and desired entries), its GET /v1/trust/bundle answers the bundle
// the test sets. The TUF attacks of test/security/tuf-*.test.ts run through it as they would in
// the field: the agent fetches the bundle because the answer offered newer versions, hands it to
// the helper over helper.sock, and the helper verifies it. The host is enrolled trusting the
// repository's first root and has web `first` (default 1.0.0) active through TUF.
import assert from 'node:assert/strict';
import { createHash, type KeyObject } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { TrustBundle } from '../../src/core/control-api.js';
import { versionDir } from '../../src/core/paths.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import type { ReceiptPayload } from '../../src/core/receipt-schema.js';
import { readTrustState } from '../../src/helper/trust/tuf-client.js';
import { metadataDir } from '../../src/helper/trust/trust-store.js';
import { signDirective } from '../../src/platform/trust/directive.js';
import { startAgentProcess, type AgentProcess } from './agent-process.js';
import { FakeControlPlane } from './fake-control-plane.js';
import { helperStatus } from './helper-status.js';
import { agentctl, processApp } from './host.js';
import { onTeardown, useHost, type HostFixture, type TeardownScope } from './host-fixture.js';
import { addRelease, envelopeOf, webRelease } from './tuf-host.js';
import { makeTufRepo, type TufRepo } from './tuf-repo.js';

const TOKEN = 'tuf-agent-token-0123456789abcdef';

export interface TufAgentHost {
  host: HostFixture;
  cp: FakeControlPlane;
  url: string;
  repo: TufRepo;
  agent: AgentProcess;
  nodeId: string;
  manifests: Map<string, Buffer>;
}

// What the helper answered for one bundle the agent handed over: ok (it trusts root/timestamp
// now), or refused with `code` and `message`.
export type Handed = { ok: true; rootVersion: number; timestampVersion: number } | { ok: false; code: string; message: string };

// Adds web `version` to the repository (a tarball the control plane serves; its manifest's url
// points there), as tuf-host's addRelease does with `opts`.
export function addAgentWeb(h: TufAgentHost, version: string, opts: Parameters<typeof addRelease>[4] = {}): Buffer {
  const tgz = webRelease(version);
  h.cp.artifacts.set(`web/${version}.tgz`, tgz);
  const m = addRelease(h.repo, 'web', version, tgz, { ...opts, url: `${h.url}/v1/artifacts/web/${version}.tgz` });
  h.manifests.set(version, m);
  return m;
}

// The whole repository as a bundle.
export function repoBundle(repo: TufRepo): TrustBundle {
  return { v: 1, files: Object.fromEntries([...repo.files].map(([n, b]) => [n, b.toString('base64')])) };
}

// The versions a bundle's own files claim: the newest root and the timestamp's version.
export function versionsOf(bundle: TrustBundle): { rootVersion: number; timestampVersion: number } {
  const roots = Object.keys(bundle.files).map((n) => /^(\d+)\.root\.json$/.exec(n)).filter((m) => m).map((m) => Number(m![1]));
  const ts = JSON.parse(Buffer.from(bundle.files['timestamp.json'] ?? '', 'base64').toString('utf8') || '{}');
  return { rootVersion: Math.max(1, ...roots), timestampVersion: Number(ts?.signed?.version ?? 0) };
}

export async function tufAgentHost(scope: TeardownScope, opts: { first?: string } = {}): Promise<TufAgentHost> {
  const cp = new FakeControlPlane();
  cp.heartbeatSeconds = 1;
  cp.heartbeatVersions = [1, 2, 3, 4, 5, 6, 7, 8];
  cp.tokens.add(TOKEN);
  const url = await cp.listen();
  onTeardown(scope, () => cp.stop());
  const repo = makeTufRepo({ releases: [] });
  const host = useHost(scope, { apps: { web: processApp({ stopTimeoutMs: 1000 }) }, controlPlane: { url } });
  await host.startHelper();
  const rootFile = path.join(host.scratch, 'root.json');
  writeFileSync(rootFile, repo.files.get('1.root.json')!);
  const e = await agentctl(host, ['enroll', '--control-plane', url, '--token', TOKEN, '--trust-root', rootFile, '--json']);
  assert.equal(e.code, 0, e.stdout + e.stderr);
  const agent = startAgentProcess(host);
  const h: TufAgentHost = { host, cp, url, repo, agent, nodeId: e.json.nodeId, manifests: new Map() };
  const first = opts.first ?? '1.0.0';
  addAgentWeb(h, first);
  const r = await serveBundle(h, repoBundle(repo), { entry: entry(h, first, 'run-0.web.1') });
  assert.ok(r.ok, JSON.stringify(r));
  const up = await receiptOf(h, 'run-0.web.1');
  assert.equal(up.outcome, 'active', JSON.stringify(up));
  return h;
}

// The desired entry of web `version` for `attemptId`: the manifest of the release added (or
// `manifestBytes`), a directive of the director key (or `director`) for this node.
export function entry(h: TufAgentHost, version: string, attemptId: string, o: { manifestBytes?: Buffer; director?: KeyObject; downgrade?: Envelope } = {}) {
  const now = Date.now();
  const manifestBytes = o.manifestBytes ?? h.manifests.get(version);
  assert.ok(manifestBytes, `a manifest of web ${version}`);
  const directive = signDirective({ nodeId: h.nodeId, app: 'web', version, attemptId, issuedAt: now - 1000, notAfter: now + 3_600_000 }, o.director ?? h.repo.keys.director);
  return { app: 'web', version, attemptId, manifest: envelopeOf(manifestBytes), directive, ...(o.downgrade ? { downgrade: o.downgrade } : {}) };
}

let nextLie = 1000;
// A timestamp version no real bundle here reaches, each call another: the versions a hostile
// control plane claims so that the agent fetches its bundle (each offer new, so the agent, which
// waits 5 minutes before fetching versions again after a refusal, fetches at once).
export const liedVersion = (): number => nextLie++;

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// Serves `bundle` as GET /v1/trust/bundle and offers `offered` in the heartbeat answers (the
// bundle's own versions unless given; with `entry`, desired too, in the same answers), then waits
// until the agent has handed it to the helper and the helper answered, from the agent's log line
// (a BUSY of the helper's bound is waited out: the agent hands it over again 15 s later).
export async function serveBundle(h: TufAgentHost, bundle: TrustBundle, o: { offered?: { rootVersion: number; timestampVersion: number }; entry?: ReturnType<typeof entry>; timeoutMs?: number } = {}): Promise<Handed> {
  const offered = o.offered ?? versionsOf(bundle);
  const from = h.agent.stderr().length;
  const asked = h.cp.trustAsked.length;
  h.cp.trustBundle = bundle;
  h.cp.trust = offered;
  if (o.entry) h.cp.desired = [o.entry];
  const at = `root ${offered.rootVersion} timestamp ${offered.timestampVersion}`;
  const okLine = new RegExp(`trust refreshed: root (\\d+) timestamp (\\d+) \\(the control plane offered ${escape(at)}\\)`);
  const failLine = new RegExp(`trust refresh to ${escape(at)} failed code=(\\S+): (.*); tried again in \\d+ s`, 'g');
  let answer: Handed | null = null;
  await h.agent.waitFor(`the helper's answer to the bundle of ${at}`, () => {
    const log = h.agent.stderr().slice(from);
    const ok = okLine.exec(log);
    if (ok) answer = { ok: true, rootVersion: Number(ok[1]), timestampVersion: Number(ok[2]) };
    for (const m of log.matchAll(failLine)) if (m[1] !== 'BUSY') answer = { ok: false, code: m[1]!, message: m[2]! };
    return answer !== null;
  }, o.timeoutMs ?? 45_000);
  assert.ok(h.cp.trustAsked.length > asked, `the agent fetched the bundle of ${at}`);
  return answer!;
}

// What the helper trusts (its store's versions) and each metadata file's sha256.
export async function trustSnapshot(h: TufAgentHost): Promise<{ rootVersion?: number; timestampVersion?: number; files: Record<string, string> }> {
  const s = await readTrustState(h.host.paths, Date.now());
  const dir = metadataDir(h.host.paths);
  const files = Object.fromEntries((existsSync(dir) ? readdirSync(dir).sort() : []).map((n) => [n, createHash('sha256').update(readFileSync(path.join(dir, n))).digest('hex')]));
  return { ...(s.rootVersion !== undefined ? { rootVersion: s.rootVersion } : {}), ...(s.timestampVersion !== undefined ? { timestampVersion: s.timestampVersion } : {}), files };
}

// Serves an attacking bundle (offered as `offered`, a lied version above what the host trusts
// unless given) and asserts the helper refused it with `code` (and `why`), that the helper's
// metadata is byte for byte what it was, and that the agent goes on heartbeating.
export async function assertBundleRefused(h: TufAgentHost, bundle: TrustBundle, code: string, why?: RegExp, offered?: { rootVersion: number; timestampVersion: number }): Promise<void> {
  const before = await trustSnapshot(h);
  const o = offered ?? { rootVersion: Math.max(before.rootVersion ?? 1, versionsOf(bundle).rootVersion), timestampVersion: liedVersion() };
  const r = await serveBundle(h, bundle, { offered: o });
  assert.equal(r.ok, false, `the helper took the bundle: ${JSON.stringify(r)}`);
  if (!r.ok) {
    assert.equal(r.code, code, r.message);
    if (why) assert.match(r.message, why);
  }
  assert.deepEqual(await trustSnapshot(h), before, 'nothing was trusted or stored from the refused bundle');
  await keepsHeartbeating(h);
}

export async function keepsHeartbeating(h: TufAgentHost): Promise<void> {
  const n = h.cp.heartbeats.filter((x) => x.status === 200).length;
  await h.agent.waitFor('a heartbeat answered after that', () => h.cp.heartbeats.filter((x) => x.status === 200).length > n, 10_000);
}

// The receipt of `attemptId` as the control plane stored it: FakeControlPlane stores only receipts
// that verify under the node's helper key (verifyHeartbeat), so a receipt here is a signed one.
export async function receiptOf(h: TufAgentHost, attemptId: string, timeoutMs = 45_000): Promise<ReceiptPayload> {
  await h.agent.waitFor(`the receipt of ${attemptId}`, () => h.cp.storedReceipts().some((x) => x.attemptId === attemptId), timeoutMs);
  return h.cp.storedReceipts().find((x) => x.attemptId === attemptId)!;
}

export async function webStatus(h: TufAgentHost): Promise<any> {
  return (await helperStatus(h.host.root)).apps.find((a: { name: string }) => a.name === 'web');
}

// The control plane asks for `e` (its heartbeat answers' desired); the update ends in a signed
// `refused` receipt with `code` (and `why`) that reaches the control plane; `current` and the
// floor stay, nothing is staged, the metadata the helper trusts is unchanged; the agent goes on.
export async function assertUpdateRefusedViaAgent(h: TufAgentHost, e: ReturnType<typeof entry>, code: string, why?: RegExp): Promise<ReceiptPayload> {
  const before = await webStatus(h);
  const trust = await trustSnapshot(h);
  h.cp.desired = [e];
  const receipt = await receiptOf(h, e.attemptId);
  assert.deepEqual([receipt.outcome, receipt.reason?.code], ['refused', code], JSON.stringify(receipt));
  if (why) assert.match(receipt.reason?.message ?? '', why);
  const st = await webStatus(h);
  assert.deepEqual([st?.current, st?.highestActive], [before?.current, before?.highestActive], 'current and the floor unchanged');
  assert.equal(existsSync(versionDir(h.host.paths, 'web', e.version)), false, `nothing staged for ${e.version}`);
  const staging = path.join(h.host.paths.appsDir, 'web/staging');
  assert.deepEqual(existsSync(staging) ? readdirSync(staging) : [], [], 'no staging left');
  assert.deepEqual(await trustSnapshot(h), trust, 'the trusted metadata unchanged');
  await keepsHeartbeating(h);
  return receipt;
}
