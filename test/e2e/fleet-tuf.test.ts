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
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { addRelease } from '../../src/control/catalog/add-release.js';
import { artifactsDirOf } from '../../src/control/catalog/artifact-path.js';
import { openStore } from '../../src/control/store/open-store.js';
import { appRelease, freePort } from '../fixtures/app-releases.js';
import { controlReceipts, controlRuns } from '../helpers/control-read.js';
import { controlCli, controlJson, startControlDaemon, waitUntil, type Daemon } from '../helpers/fleet.js';
import { helperStatus } from '../helpers/helper-status.js';
import { agentctl, makeHost, processApp, startHelper, type HelperProcess, type TestHost } from '../helpers/host.js';
import { startAgentProcess, type AgentProcess } from '../helpers/agent-process.js';
import { killApps } from '../helpers/app-processes.js';
import { controlAt, writeKeyPair, type Run } from '../helpers/trust-cli.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-fleet-tuf-'));
const db = path.join(dir, 'control.db');
let control: (Daemon & { url: string }) | null = null;
let host: TestHost | null = null;
let helper: HelperProcess | null = null;
let agent: AgentProcess | null = null;

after(async () => {
  await agent?.stop();
  await helper?.stop();
  if (host) {
    killApps(host, ['web']);
    host.cleanup();
  }
  await control?.stop();
  rmSync(dir, { recursive: true, force: true });
});

// The local CLI on the control plane's host (--db), as the other fleet tests run it.
const ctl = (...args: string[]): Promise<any> => controlJson(db, args);

async function runEnded(): Promise<any> {
  await waitUntil('the run to end', 90_000, async () => {
    const [run] = await controlRuns(db, 'web');
    return run && run.status !== 'running' ? true : undefined;
  });
  return (await ctl('rollout', 'status', 'web')).runs[0];
}

async function webOnHost(): Promise<string> {
  const web = (await helperStatus(host!.root)).apps.find((a: { name: string }) => a.name === 'web');
  return `${web.current}/${web.highestActive}`;
}

test('a host enrolled with the exported root installs web through the ceremony and delegation, reports tuf, and refuses a release no delegation signed', { timeout: 300_000 }, async () => {
  const adminPort = await freePort();
  control = await startControlDaemon(db, 0, 1, { args: ['--admin-listen', `127.0.0.1:${adminPort}`] });
  const admin = `http://127.0.0.1:${adminPort}`;
  const add = await controlCli(db, ['operator', 'add', 'ada', '--role', 'admin']);
  assert.equal(add.code, 0, add.stdout + add.stderr);
  const token = add.stdout.trim();
  // The operator's commands, through --server with the token, from "the machine that holds the key".
  const op = async (...args: string[]): Promise<Run> => {
    const r = await controlAt(admin, args, token);
    assert.equal(r.code, 0, `steward-control ${args.join(' ')}: ${r.stdout}${r.stderr}`);
    return r;
  };
  const status = async () => (await op('trust', 'status', '--json')).json;

  // 1. Keys, init, the ceremony, the delegation, two releases, the exported root.
  const [ra, rb, rc, w1, w2, evil] = ['root-alice', 'root-bob', 'root-carol', 'web-dana', 'web-erin', 'evil'].map((n) => writeKeyPair(dir, n));
  await op('trust', 'init', '--keys', `${ra!.pub},${rb!.pub},${rc!.pub}`, '--threshold', '2');
  assert.equal((await status()).pending.root.version, 1);
  const s1 = await op('trust', 'sign-root', '--key', ra!.key);
  assert.match(s1.stdout, /1 of 2 signatures/);
  const s2 = await op('trust', 'sign-root', '--key', rb!.key);
  assert.match(s2.stdout, /published root v1/);
  let s = await status();
  assert.deepEqual([s.root?.version, s.targets], [1, null], JSON.stringify(s));
  // The top-level targets v1 the publishing signature put pending (Bob signed it already): one
  // more round of the same command.
  const s3 = await op('trust', 'sign-root', '--key', ra!.key);
  assert.match(s3.stdout, /published.*targets v1/, s3.stdout);
  s = await status();
  assert.deepEqual([s.root?.version, s.targets?.version, s.repository], [1, 1, true], JSON.stringify(s));
  await op('trust', 'delegate', 'web', '--keys', `${w1!.pub},${w2!.pub}`, '--threshold', '2');
  await op('trust', 'sign-root', '--key', ra!.key);
  await op('trust', 'sign-root', '--key', rb!.key);
  s = await status();
  assert.equal(s.targets.version, 2, JSON.stringify(s));
  assert.deepEqual(s.apps.map((x: { app: string; threshold: number }) => [x.app, x.threshold]), [['web', 2]]);
  for (const v of ['1.0.0', '1.1.0']) {
    const file = path.join(dir, `web-${v}.tgz`);
    writeFileSync(file, appRelease('web', v, 0, { probe: 'none', stableMs: 300 }));
    const r = await op('release', 'add', 'web', v, '--file', file, '--base-url', control.url, '--key', w1!.key, '--key', w2!.key, '--json');
    assert.equal(r.json.trust?.role, 'app.web', r.stdout);
  }
  const rootFile = path.join(dir, 'root.json');
  await op('trust', 'export-root', '--out', rootFile);
  assert.ok(existsSync(rootFile));

  // 2. A host with no release key for web, enrolled with the exported root.
  host = makeHost({ apps: { web: processApp({ stopTimeoutMs: 1000 }) } });
  assert.equal(existsSync(path.join(host.paths.trustedKeysDir, 'web')), false, 'no release key for web on the host');
  helper = await startHelper(host);
  const enrolled = await agentctl(host, ['enroll', '--control-plane', control.url, '--token', (await ctl('token', 'create')).token, '--trust-root', rootFile, '--json']);
  assert.equal(enrolled.code, 0, enrolled.stdout + enrolled.stderr);
  assert.deepEqual(enrolled.json.trust, { scheme: 'tuf', rootVersion: 1 });
  const nodeId: string = enrolled.json.nodeId;
  agent = startAgentProcess(host);
  await waitUntil('the node to heartbeat its trust as tuf, not stale', 60_000, async () => {
    const n = (await ctl('nodes')).nodes.find((x: { nodeId: string }) => x.nodeId === nodeId);
    return n?.trust?.scheme === 'tuf' && n.trust.timestampVersion !== undefined && n.metadataStale === false && n.apps.length > 0 ? n : undefined;
  });

  for (const v of ['1.0.0', '1.1.0']) {
    await ctl('rollout', 'start', 'web', v, '--bake', '0', '--batch', '100%');
    const run = await runEnded();
    assert.equal(run.status, 'succeeded', `web ${v}: ${JSON.stringify(run, null, 2)}\n${agent.stderr().slice(-4000)}`);
    assert.equal(await webOnHost(), `${v}/${v}`);
  }
  const node = (await ctl('nodes')).nodes.find((x: { nodeId: string }) => x.nodeId === nodeId);
  assert.equal(node.trust.scheme, 'tuf', JSON.stringify(node));
  assert.equal(node.trust.rootVersion, 1, JSON.stringify(node));
  assert.equal(node.metadataStale, false, JSON.stringify(node));
  const st = await agentctl(host, ['status', '--json']);
  assert.equal(st.code, 0, st.stderr);
  assert.equal(st.json.trust.scheme, 'tuf', JSON.stringify(st.json.trust));
  assert.equal(st.json.trust.rootVersion, 1, JSON.stringify(st.json.trust));
  const ts = (await status()).nodes;
  assert.equal(ts.byScheme?.tuf ?? ts.tuf, 1, JSON.stringify(ts));

  // 3. The control plane compromised: whoever holds its database allows a key of their own for
  // web in the catalog and writes a release of web 9.9.9 signed by it (no delegation key signed
  // it, so it is no target of app.web), then rolls it out. The director signs the directive; the
  // host still refuses.
  await ctl('keys', 'allow', 'web', '--key', evil!.pub);
  const file = path.join(dir, 'web-9.9.9.tgz');
  writeFileSync(file, appRelease('web', '9.9.9', 0, { probe: 'none', stableMs: 300 }));
  const store = await openStore(db);
  try {
    await addRelease(store, { app: 'web', version: '9.9.9', file, url: null, baseUrl: control.url, privateKeyPem: readFileSync(evil!.key, 'utf8'), expiresDays: 30, artifactsDir: artifactsDirOf(db) });
  } finally {
    await store.close();
  }
  await ctl('rollout', 'start', 'web', '9.9.9', '--bake', '0', '--max-refused', '0');
  const refused = await runEnded();
  assert.equal(refused.status, 'halted', JSON.stringify(refused, null, 2));
  // A refusal for the release itself (not the host's state) halts the run at once, naming the code.
  assert.deepEqual([refused.haltReason.code, refused.haltReason.nodeId], ['TRUST_UNSIGNED', nodeId], JSON.stringify(refused.haltReason));
  const canary = refused.nodes.find((x: { state: string }) => x.state === 'refused');
  assert.equal(canary?.reason, 'TRUST_UNSIGNED', JSON.stringify(refused.nodes));
  const receipt = (await controlReceipts(db, 'web')).find((r) => r.attemptId === canary.attemptId);
  assert.deepEqual([receipt?.outcome, receipt?.reasonCode, receipt?.targetVersion], ['refused', 'TRUST_UNSIGNED', '9.9.9'], JSON.stringify(receipt));
  assert.match(receipt?.reasonMessage ?? '', /web\/9\.9\.9\/manifest\.json is not a target the app\.web delegation signs/);
  assert.equal(await webOnHost(), '1.1.0/1.1.0', 'web keeps running 1.1.0');
  assert.deepEqual(readdirSync(path.join(host.paths.appsDir, 'web/versions')).sort(), ['1.0.0', '1.1.0'], 'nothing of 9.9.9 was staged');
});
