import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { signDirective } from '../../src/platform/trust/directive.js';
import { appRelease } from '../fixtures/app-releases.js';
import { startAgentProcess } from '../helpers/agent-process.js';
import { FakeControlPlane } from '../helpers/fake-control-plane.js';
import { helperStatus } from '../helpers/helper-status.js';
import { agentctl, processApp } from '../helpers/host.js';
import { useHost } from '../helpers/host-fixture.js';
import { addRelease, bundleOf, envelopeOf } from '../helpers/tuf-host.js';
import { makeTufRepo } from '../helpers/tuf-repo.js';

// Slow retrieval (TUF's attack of that name; docs/trust.md, "TUF on the host"): a hostile control
// plane answers heartbeats as usual but dribbles the trust bundle a byte at a time, answers
// nothing at all, or sends bytes without end, to keep the host on the metadata it has (or hang
// the agent). Against a real helper and agent: the agent gives up within its deadline
// (controlPlane.trustBundleTimeoutMs, here 3 s; 30 s by default) or its byte cap (8 MiB); the
// heartbeats go on while the bundle is being dribbled; the update the control plane asked for
// ends in a signed `refused` receipt FETCH_FAILED naming both the refusal and the fetch (the
// node's trouble, not a release no delegation signed); nothing is staged and `current` stays.
// The same host then installs the release once the bundle comes whole.

const DEADLINE_MS = 3_000;
type Mode = 'good' | 'dribble' | 'silent' | 'endless';

test('a dribbled, silent or endless trust bundle: the agent gives up in time, keeps heartbeating, and the update ends FETCH_FAILED with nothing staged', { timeout: 150_000 }, async (t) => {
  const cp = new FakeControlPlane();
  cp.heartbeatSeconds = 1;
  cp.heartbeatVersions = [1, 2, 3, 4, 5, 6, 7, 8];
  cp.tokens.add('slow-token-0123456789abcdef');
  const repo = makeTufRepo({ releases: [] });

  // The hostile control plane: heartbeats, enrollment and artifacts as FakeControlPlane answers
  // them; GET /v1/trust/bundle as `mode` says. Each bundle request: when it came and went.
  let mode: Mode = 'good';
  const bundleRequests: Array<{ mode: Mode; at: number; closedAt?: number; sent: number }> = [];
  const timers = new Set<NodeJS.Timeout>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'GET' && req.url?.startsWith('/v1/trust/bundle?') && mode !== 'good') {
        const r: { mode: Mode; at: number; closedAt?: number; sent: number } = { mode, at: Date.now(), sent: 0 };
        bundleRequests.push(r);
        let timer: NodeJS.Timeout | undefined;
        res.on('close', () => {
          r.closedAt = Date.now();
          if (timer) {
            clearInterval(timer);
            timers.delete(timer);
          }
        });
        if (mode === 'silent') return; // not even the headers
        res.writeHead(200, { 'Content-Type': 'application/json' });
        if (mode === 'dribble') {
          const body = Buffer.from(JSON.stringify(bundleOf(repo)));
          res.write(body.subarray(0, 1));
          r.sent = 1;
          timer = setInterval(() => {
            if (r.sent < body.length - 1) res.write(body.subarray(r.sent, ++r.sent));
          }, 200);
          timers.add(timer);
          return;
        }
        // endless: 64 KiB chunks of spaces (valid JSON whitespace) as fast as the agent reads them.
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        const pump = () => {
          while (!res.destroyed && res.write(chunk)) r.sent += chunk.length;
          if (!res.destroyed) res.once('drain', pump);
        };
        res.write('{');
        pump();
        return;
      }
      const a = cp.handle(req.method ?? 'GET', req.url ?? '/', Buffer.concat(chunks));
      res.statusCode = a.status;
      if (a.body) return void res.end(a.body);
      res.setHeader('Content-Type', 'application/json');
      res.end(a.json === undefined ? '' : JSON.stringify(a.json));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.after(async () => {
    for (const x of timers) clearInterval(x);
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const host = useHost(t, { apps: { web: processApp({ stopTimeoutMs: 1000 }) }, controlPlane: { url, trustBundleTimeoutMs: DEADLINE_MS } });
  await host.startHelper();
  const rootFile = path.join(host.scratch, 'root.json');
  writeFileSync(rootFile, repo.files.get('1.root.json')!);
  const e = await agentctl(host, ['enroll', '--control-plane', url, '--token', 'slow-token-0123456789abcdef', '--trust-root', rootFile, '--json']);
  assert.equal(e.code, 0, e.stdout + e.stderr);
  const nodeId: string = e.json.nodeId;

  // The host first takes the repository as it is (no release yet), from a well-behaved bundle.
  cp.trust = { rootVersion: 1, timestampVersion: repo.timestamp.signed.version };
  cp.trustBundle = bundleOf(repo);
  const agent = startAgentProcess(host);
  host.stopFirst(() => agent.stop());
  const trusted = (v: number) => cp.heartbeats.some((h) => h.payload.trust?.timestampVersion === v);
  await agent.waitFor('the first refresh', () => trusted(repo.timestamp.signed.version), 30_000);

  // web 1.0.0 is added: a target only the newer metadata names.
  const tgz = appRelease('web', '1.0.0', 0, { probe: 'none', stableMs: 100 });
  cp.artifacts.set('web/1.0.0.tgz', tgz);
  const manifestBytes = addRelease(repo, 'web', '1.0.0', tgz, { url: `${url}/v1/artifacts/web/1.0.0.tgz` });
  const entry = (attemptId: string) => {
    const now = Date.now();
    return { app: 'web', version: '1.0.0', attemptId, manifest: envelopeOf(manifestBytes), directive: signDirective({ nodeId, app: 'web', version: '1.0.0', attemptId, issuedAt: now - 1000, notAfter: now + 3_600_000 }, repo.keys.director) };
  };
  const receiptOf = async (attemptId: string) => {
    await agent.waitFor(`the receipt of ${attemptId}`, () => cp.storedReceipts().some((x) => x.attemptId === attemptId), 60_000);
    return cp.storedReceipts().find((x) => x.attemptId === attemptId)!;
  };
  const nothingStaged = async (what: string) => {
    const web = (await helperStatus(host.root)).apps.find((a: { name: string }) => a.name === 'web');
    assert.equal(web?.current ?? null, null, `${what}: current unchanged`);
    const versions = path.join(host.paths.appsDir, 'web/versions');
    assert.deepEqual(existsSync(versions) ? readdirSync(versions) : [], [], `${what}: nothing staged`);
    const staging = path.join(host.paths.appsDir, 'web/staging');
    assert.deepEqual(existsSync(staging) ? readdirSync(staging) : [], [], `${what}: no staging left`);
  };

  const cases: Array<{ mode: Exclude<Mode, 'good'>; why: RegExp; within: [number, number] }> = [
    { mode: 'dribble', why: /no complete answer within 3000 ms/, within: [DEADLINE_MS - 200, DEADLINE_MS + 2_000] },
    { mode: 'silent', why: /no complete answer within 3000 ms/, within: [DEADLINE_MS - 200, DEADLINE_MS + 2_000] },
    { mode: 'endless', why: /the answer is larger than 8388608 bytes/, within: [0, DEADLINE_MS - 200] },
  ];
  for (const [i, c] of cases.entries()) {
    if (i > 0) repo.publish(Date.now()); // newer versions: the agent tries again for them at once
    mode = c.mode;
    const attemptId = `run-${i + 1}.web.1`;
    const before = bundleRequests.length;
    cp.desired = [entry(attemptId)];
    cp.trust = { rootVersion: 1, timestampVersion: repo.timestamp.signed.version };
    const receipt = await receiptOf(attemptId);
    const r = bundleRequests[before];
    assert.ok(r && r.mode === c.mode && r.closedAt !== undefined, `${c.mode}: the agent asked for the bundle and gave up: ${JSON.stringify(bundleRequests)}`);
    const took = r.closedAt! - r.at;
    assert.ok(took >= c.within[0] && took <= c.within[1], `${c.mode}: the agent gave up after ${took} ms, expected within ${c.within.join('..')} ms`);
    if (c.mode === 'endless') assert.ok(r.sent <= 16 * 1024 * 1024, `endless: ${r.sent} bytes sent before the agent hung up`);
    // The heartbeats went on while the bundle was dribbled or withheld (1 s apart).
    const during = cp.heartbeats.filter((h) => h.payload.sentAt > r.at && h.payload.sentAt < r.closedAt!).length;
    if (c.mode !== 'endless') assert.ok(during >= 2, `${c.mode}: ${during} heartbeats in the ${took} ms the bundle request was open\n${agent.stderr().slice(-3000)}`);
    assert.deepEqual([receipt.outcome, receipt.reason?.code], ['refused', 'FETCH_FAILED'], JSON.stringify(receipt));
    assert.match(receipt.reason?.message ?? '', /web\/1\.0\.0\/manifest\.json is not a target the app\.web delegation signs \(TRUST_UNSIGNED\)/, receipt.reason?.message);
    assert.match(receipt.reason?.message ?? '', /the agent could not fetch it: CONTROL_PLANE_UNREACHABLE: /, receipt.reason?.message);
    assert.match(receipt.reason?.message ?? '', c.why, receipt.reason?.message);
    assert.match(agent.stderr(), /trust refresh to root 1 timestamp \d+ failed code=CONTROL_PLANE_UNREACHABLE/);
    await nothingStaged(c.mode);
  }

  // The same release, the bundle now served whole: installed through TUF.
  repo.publish(Date.now());
  mode = 'good';
  cp.trustBundle = bundleOf(repo);
  cp.desired = [entry('run-4.web.1')];
  cp.trust = { rootVersion: 1, timestampVersion: repo.timestamp.signed.version };
  const ok = await receiptOf('run-4.web.1');
  assert.equal(ok.outcome, 'active', JSON.stringify(ok));
  assert.equal((await helperStatus(host.root)).apps.find((a: { name: string }) => a.name === 'web')?.current, '1.0.0');
});
