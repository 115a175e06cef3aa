import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { signDirective } from '../../src/platform/trust/directive.js';
import { appRelease } from '../fixtures/app-releases.js';
import { startAgentProcess } from '../helpers/agent-process.js';
import { FakeControlPlane } from '../helpers/fake-control-plane.js';
import { agentctl, processApp } from '../helpers/host.js';
import { useHost } from '../helpers/host-fixture.js';
import { addRelease, bundleOf, envelopeOf } from '../helpers/tuf-host.js';
import { makeTufRepo } from '../helpers/tuf-repo.js';

// Issue 36 end to end on the host (docs/design.md §21.3): a node enrolled with --trust-root; the
// control plane's answer names newer TUF versions than the helper's, so the agent fetches the
// bundle and hands it over; the desired entry's directive goes with its update; the release is
// installed through TUF (no release key is trusted for web on this host); heartbeats v8 say so.
test('an agent enrolled with --trust-root refreshes the trust from the bundle and installs a directed release', { timeout: 120_000 }, async (t) => {
  const host = useHost(t, { apps: { web: processApp({ stopTimeoutMs: 1000 }) } });
  await host.startHelper();
  const cp = new FakeControlPlane();
  cp.heartbeatSeconds = 1;
  cp.heartbeatVersions = [1, 2, 3, 4, 5, 6, 7, 8];
  cp.tokens.add('tuf-token-0123456789abcdef');
  await cp.listen();
  t.after(() => cp.stop());
  const repo = makeTufRepo({ releases: [] });
  const rootFile = path.join(host.scratch, 'root.json');
  writeFileSync(rootFile, repo.files.get('1.root.json')!);
  const r = await agentctl(host, ['enroll', '--control-plane', cp.url, '--token', 'tuf-token-0123456789abcdef', '--trust-root', rootFile, '--json']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(r.json.trust, { scheme: 'tuf', rootVersion: 1 });
  const nodeId: string = r.json.nodeId;

  const tgz = appRelease('web', '1.0.0', 0, { probe: 'none', stableMs: 100 });
  cp.artifacts.set('web/1.0.0.tgz', tgz);
  const manifestBytes = addRelease(repo, 'web', '1.0.0', tgz, { url: `${cp.url}/v1/artifacts/web/1.0.0.tgz` });
  cp.trust = { rootVersion: 1, timestampVersion: repo.timestamp.signed.version };
  cp.trustBundle = bundleOf(repo);
  const attemptId = 'run-1.web.1';
  const now = Date.now();
  cp.desired = [{ app: 'web', version: '1.0.0', attemptId, manifest: envelopeOf(manifestBytes), directive: signDirective({ nodeId, app: 'web', version: '1.0.0', attemptId, issuedAt: now - 1000, notAfter: now + 3_600_000 }, repo.keys.director) }];

  const agent = startAgentProcess(host);
  host.stopFirst(() => agent.stop());
  await agent.waitFor('the receipt of the directed update', () => cp.storedReceipts().some((x) => x.attemptId === attemptId), 60_000);
  const receipt = cp.storedReceipts().find((x) => x.attemptId === attemptId)!;
  assert.equal(receipt.outcome, 'active', JSON.stringify(receipt));
  assert.deepEqual(cp.trustAsked.slice(0, 1), [1], 'the bundle for the root the helper trusted');
  await agent.waitFor('a heartbeat reporting the refreshed trust', () => cp.heartbeats.some((h) => h.payload.trust?.timestampVersion === cp.trust!.timestampVersion), 30_000);
  const last = cp.heartbeats.filter((h) => h.payload.trust).at(-1)!.payload.trust!;
  assert.equal(last.scheme, 'tuf');
  assert.equal(last.rootVersion, 1);
  assert.ok(last.timestampAgeSeconds !== undefined && last.timestampAgeSeconds < 120, JSON.stringify(last));
  const st = await agentctl(host, ['status']);
  assert.match(st.stdout, /trust: tuf, root v1, timestamp v\d+ signed \d+ s ago/);
});
