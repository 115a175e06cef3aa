// Issue 36 end to end (docs/design.md §21, docs/trust.md): a real steward-control (SQLite) and a
// real host (helper and agent) on TUF. The operator's commands run exactly as docs/trust.md gives
// them, as the real CLI through the admin API: `trust init` with three root keys, the signing
// ceremony, `trust delegate web` to two web keys, `release add ... --key w1 --key w2`, `trust
// export-root`. The host is enrolled with `--trust-root` and trusts no release key for web: it
// installs 1.0.0 then 1.1.0 only through the repository, and reports `tuf` in its heartbeats. Then
// the control plane is compromised: a release of web 9.9.9 signed by a key its catalog allows but
// no delegation names is written into its database and rolled out; the host refuses it
// (TRUST_UNSIGNED), the run halts, and web stays on 1.1.0.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { addRelease } from '../../src/control/catalog/add-release.js';
import { artifactsDirOf } from '../../src/control/catalog/artifact-path.js';
import { openStore } from '../../src/control/store/open-store.js';
import { appRelease } from '../fixtures/app-releases.js';
import { controlReceipts } from '../helpers/control-read.js';
import { startTufFleet, type TufFleet } from '../helpers/fleet-tuf.js';
import { agentctl } from '../helpers/host.js';
import { writeKeyPair } from '../helpers/trust-cli.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-fleet-tuf-'));
let fleet: TufFleet | null = null;

after(async () => {
  await fleet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('a host enrolled with the exported root installs web through the ceremony and delegation, reports tuf, and refuses a release no delegation signed', { timeout: 300_000 }, async () => {
  // 1. and 2. The repository by the operator's commands, and a host enrolled with its root
  // (helpers/fleet-tuf.ts asserts each step of the ceremony).
  const f = (fleet = await startTufFleet(dir, { releases: ['1.0.0', '1.1.0'] }));
  const { ctl, db } = f;
  const { host, nodeId, agent } = f.hosts[0]!;

  for (const v of ['1.0.0', '1.1.0']) {
    await ctl('rollout', 'start', 'web', v, '--bake', '0', '--batch', '100%');
    const run = await f.runEnded();
    assert.equal(run.status, 'succeeded', `web ${v}: ${JSON.stringify(run, null, 2)}\n${agent.stderr().slice(-4000)}`);
    assert.deepEqual(await f.webOnHosts(), [`${v}/${v}`]);
  }
  const [node] = await f.nodes();
  assert.equal(node.trust.scheme, 'tuf', JSON.stringify(node));
  assert.equal(node.trust.rootVersion, 1, JSON.stringify(node));
  assert.equal(node.metadataStale, false, JSON.stringify(node));
  const st = await agentctl(host, ['status', '--json']);
  assert.equal(st.code, 0, st.stderr);
  assert.equal(st.json.trust.scheme, 'tuf', JSON.stringify(st.json.trust));
  assert.equal(st.json.trust.rootVersion, 1, JSON.stringify(st.json.trust));
  const ts = (await f.status()).nodes;
  assert.equal(ts.byScheme?.tuf ?? ts.tuf, 1, JSON.stringify(ts));

  // 3. The control plane compromised: whoever holds its database allows a key of their own for
  // web in the catalog and writes a release of web 9.9.9 signed by it (no delegation key signed
  // it, so it is no target of app.web), then rolls it out. The director signs the directive; the
  // host still refuses.
  const evil = writeKeyPair(dir, 'evil');
  await ctl('keys', 'allow', 'web', '--key', evil.pub);
  const file = path.join(dir, 'web-9.9.9.tgz');
  writeFileSync(file, appRelease('web', '9.9.9', 0, { probe: 'none', stableMs: 300 }));
  const store = await openStore(db);
  try {
    await addRelease(store, { app: 'web', version: '9.9.9', file, url: null, baseUrl: f.control.url, privateKeyPem: readFileSync(evil.key, 'utf8'), expiresDays: 30, artifactsDir: artifactsDirOf(db) });
  } finally {
    await store.close();
  }
  await ctl('rollout', 'start', 'web', '9.9.9', '--bake', '0', '--max-refused', '0');
  const refused = await f.runEnded();
  assert.equal(refused.status, 'halted', JSON.stringify(refused, null, 2));
  // A refusal for the release itself (not the host's state) halts the run at once, naming the code.
  assert.deepEqual([refused.haltReason.code, refused.haltReason.nodeId], ['TRUST_UNSIGNED', nodeId], JSON.stringify(refused.haltReason));
  const canary = refused.nodes.find((x: { state: string }) => x.state === 'refused');
  assert.equal(canary?.reason, 'TRUST_UNSIGNED', JSON.stringify(refused.nodes));
  const receipt = (await controlReceipts(db, 'web')).find((r) => r.attemptId === canary.attemptId);
  assert.deepEqual([receipt?.outcome, receipt?.reasonCode, receipt?.targetVersion], ['refused', 'TRUST_UNSIGNED', '9.9.9'], JSON.stringify(receipt));
  assert.match(receipt?.reasonMessage ?? '', /web\/9\.9\.9\/manifest\.json is not a target the app\.web delegation signs/);
  assert.deepEqual(await f.webOnHosts(), ['1.1.0/1.1.0'], 'web keeps running 1.1.0');
  assert.deepEqual(readdirSync(path.join(host.paths.appsDir, 'web/versions')).sort(), ['1.0.0', '1.1.0'], 'nothing of 9.9.9 was staged');
});
