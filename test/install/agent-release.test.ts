import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { installAgentRelease } from '../../src/install/agent-release.js';
import { readAgentKey, trustAgentKey } from '../../src/install/agent-key.js';
import { AGENT_BUNDLE, AGENT_ENTRY, packageVersion } from '../../src/install/agent-release-pack.js';
import { StewardError } from '../../src/core/errors.js';
import { AGENT_APP } from '../../src/core/names.js';
import { currentLink, trustedKeysFor, versionDir } from '../../src/core/paths.js';
import { readAppState } from '../../src/helper/state/app-state.js';
import { readMarker } from '../../src/helper/release-store.js';
import { generateKeyPair } from '../../src/platform/keys.js';
import { IS_ROOT, makeHost, REPO, sri } from '../helpers/host.js';
import { bundleOf } from '../helpers/module-list.js';

// `agentctl install`'s agent release: the agent packed from the steward package, staged through
// the helper's own staging as a signed release of the app steward-agent, `current` pointing at
// it; idempotent; never replacing a version steward has since updated to. (Unsigned agent
// releases: test/security/agent-release-unsigned.test.ts.)

const agentHost = () => makeHost({ apps: { [AGENT_APP]: { runner: 'unit', unit: 'steward-agent.service' } } });

test('the agent is installed as a signed, read-only release with current pointing at it, and runs from there', { timeout: 120_000 }, async (t) => {
  const host = agentHost();
  t.after(() => host.cleanup());
  const version = packageVersion(REPO);
  const r = await installAgentRelease(REPO, host.paths);
  assert.equal(r.action, 'created', r.detail);
  assert.equal(readlinkSync(currentLink(host.paths, AGENT_APP)), `versions/${version}`);
  const marker = await readMarker(host.paths, AGENT_APP, version);
  assert.ok(marker, 'a valid marker');
  assert.equal(marker.signed, true);
  // The one-time install key signed it and is trusted nowhere afterwards.
  assert.match(r.detail, new RegExp(`one-time install key ${marker.keyId}`));
  assert.equal(existsSync(trustedKeysFor(host.paths, AGENT_APP)), false);
  const state = await readAppState(host.paths, AGENT_APP);
  assert.equal(state.highestActive, version);
  // Without a hold (docs/design.md §14): the control plane may update the agent from the start.
  assert.equal(state.hold, null);
  const tree = versionDir(host.paths, AGENT_APP, version);
  assert.equal(lstatSync(tree).mode & 0o7777, 0o555);
  if (IS_ROOT) assert.equal(lstatSync(path.join(tree, AGENT_ENTRY)).uid, 0);
  assert.equal(lstatSync(path.join(tree, AGENT_ENTRY)).mode & 0o222, 0, 'read-only');
  // The agent's launcher and bundle (docs/design.md §15), and no node_modules: nothing of the control
  // plane, no compiler, no other program.
  assert.deepEqual(readdirSync(tree).sort(), ['.steward-valid', 'bin', 'dist', 'package.json', 'steward-release.json']);
  // Its probe when an update brings it (docs/design.md §14): the new agent's confirm of an answered
  // heartbeat within 60 s, then the same process for 5 s.
  assert.deepEqual(JSON.parse(readFileSync(path.join(tree, 'steward-release.json'), 'utf8')).health, { confirm: 'heartbeat', timeoutMs: 60_000, stableMs: 5000 });
  assert.deepEqual(readdirSync(path.join(tree, 'bin')), ['steward-agent.js']);
  assert.deepEqual(readdirSync(path.join(tree, 'dist/bundle')), ['steward-agent']);
  assert.deepEqual(readdirSync(path.join(tree, AGENT_BUNDLE)).sort(), readdirSync(path.join(REPO, AGENT_BUNDLE)).sort());
  // It runs from its own tree: its imports resolve inside it (no /opt/steward/lib).
  // (--help exits 2 after printing the usage; a missing import would fail before that.)
  const out = await new Promise<string>((resolve) =>
    execFile(process.execPath, [path.join(currentLink(host.paths, AGENT_APP), AGENT_ENTRY), '--help'], { cwd: tree }, (_err, stdout, stderr) => resolve(stdout + stderr)),
  );
  assert.match(out, /^Usage: steward-agent/, out);

  const again = await installAgentRelease(REPO, host.paths);
  assert.equal(again.action, 'unchanged', again.detail);
  assert.deepEqual(await readMarker(host.paths, AGENT_APP, version), marker, 'the tree was not staged again');
});

test('a version steward has since updated the agent to is left alone by install', { timeout: 120_000 }, async (t) => {
  const host = agentHost();
  t.after(() => host.cleanup());
  // As if an update had moved current to a version newer than this package (a valid marker is
  // all install looks at; no packing happens when it leaves the agent alone).
  const link = currentLink(host.paths, AGENT_APP);
  const newer = versionDir(host.paths, AGENT_APP, '99.0.0');
  mkdirSync(newer, { recursive: true });
  const marker = { schemaVersion: 1, tarballIntegrity: sri(Buffer.from('x')), treeDigest: `sha256-${'A'.repeat(43)}=`, signed: true, keyId: '0123456789abcdef', version: '99.0.0', stagedAt: Date.now() };
  writeFileSync(path.join(newer, '.steward-valid'), JSON.stringify(marker));
  const { pointCurrent } = await import('../../src/helper/update/swap.js');
  const { noFaults } = await import('../../src/platform/faults.js');
  await pointCurrent(host.paths, AGENT_APP, '99.0.0', noFaults, 'forward');
  const r = await installAgentRelease(REPO, host.paths);
  assert.equal(r.action, 'skipped', r.detail);
  assert.equal(readlinkSync(link), 'versions/99.0.0');
});

test('--agent-key trusts a public key for steward-agent by its keyId and refuses a private key', async (t) => {
  const host = agentHost();
  t.after(() => host.cleanup());
  const none = await trustAgentKey(host.paths, null);
  assert.equal(none.action, 'skipped');
  const kp = generateKeyPair();
  const pub = path.join(host.scratch, 'release.pub');
  const priv = path.join(host.scratch, 'release.key');
  writeFileSync(pub, kp.publicPem);
  writeFileSync(priv, kp.privatePem);
  await assert.rejects(readAgentKey(priv), (err: unknown) => err instanceof StewardError && err.code === 'USAGE' && /private key/.test(err.message));
  assert.equal(existsSync(trustedKeysFor(host.paths, AGENT_APP)), false, 'nothing written for a private key');
  const key = await readAgentKey(pub);
  const r = await trustAgentKey(host.paths, key);
  assert.equal(r.action, 'created');
  const file = path.join(trustedKeysFor(host.paths, AGENT_APP), `${kp.keyId}.pub`);
  assert.equal(readFileSync(file, 'utf8'), kp.publicPem);
  assert.equal(lstatSync(file).mode & 0o7777, 0o644);
  assert.equal((await trustAgentKey(host.paths, key)).action, 'unchanged');
  assert.equal((await trustAgentKey(host.paths, null)).action, 'unchanged');
});

test("the agent's bundle imports only node's own modules and its own files", () => {
  // What the release carries is all the agent has: a package import left outside its bundle
  // would fail in the release tree (no node_modules), on whichever rare path reaches it.
  const meta = JSON.parse(readFileSync(path.join(REPO, 'dist/bundle/steward-agent.meta.json'), 'utf8')) as { outputs: Record<string, { imports: { path: string; external?: boolean }[] }> };
  const outputs = Object.keys(meta.outputs);
  assert.ok(outputs.length > 1 && bundleOf('steward-agent').sources().length > 50, `${outputs.length} files, the agent's modules in them`);
  const foreign = outputs.flatMap((o) => meta.outputs[o]!.imports.filter((i) => !(i.path.startsWith('node:') || builtinModules.includes(i.path) || outputs.includes(i.path))).map((i) => `${o} imports ${i.path}`));
  assert.deepEqual(foreign, []);
});
