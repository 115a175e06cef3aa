import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addWeb, assertRefreshRefused, assertUpdateRefused, bundleOf, refresh, trustedVersions, tufHost, tufUpdate, web } from '../helpers/tuf-host.js';
import { addAgentWeb, assertBundleRefused, assertUpdateRefusedViaAgent, entry, keepsHeartbeating, repoBundle, serveBundle, trustSnapshot, tufAgentHost, versionsOf } from '../helpers/tuf-agent-host.js';

// A freeze (TUF's freeze attack): whoever sits between the control plane and the host replays
// metadata that is older but not expired yet, to keep the host from learning of a newer release
// (a security fix). Once a newer timestamp is trusted, an older one is a rollback: refused
// TRUST_ROLLBACK, and the host keeps what it trusts.
test('a replayed older, unexpired timestamp and snapshot after a newer one was trusted is refused TRUST_ROLLBACK; nothing changes', { timeout: 120_000 }, async (t) => {
  const h = await tufHost(t);
  const old = bundleOf(h.repo);
  addWeb(h, '1.1.0');
  const r = await refresh(h);
  const before = await trustedVersions(h);
  assert.equal(r.timestampVersion, before.timestampVersion);
  await assertRefreshRefused(h, old, 'TRUST_ROLLBACK', /timestamp version \d+ is less than current version/);
  // Only the old timestamp and snapshot replayed, with the current targets: the same.
  await assertRefreshRefused(h, { v: 1, files: { ...bundleOf(h.repo).files, 'timestamp.json': old.files['timestamp.json']! } }, 'TRUST_ROLLBACK');
  // An update the frozen metadata would not know still needs the trusted metadata to sign it.
  addWeb(h, '1.2.0', { publish: true });
  await assertUpdateRefused(h, tufUpdate(h, '1.2.0', 'run-1.web.1'), 'run-1.web.1', 'TRUST_UNSIGNED', '1.0.0', '1.2.0', /is not a target the app\.web delegation signs/);
  assert.equal((await web(h)).current, '1.0.0');
  assert.deepEqual(await trustedVersions(h), before);
});

// The same freeze through a real agent, against a hostile control plane that replays the old
// bundle. By design the agent does not even fetch a bundle for versions no newer than the helper
// trusts (agent/trust-bundle.ts, needsRefresh): a control plane that offers the old versions is
// never asked for them, and the helper keeps what it trusts. One that lies, offering newer
// versions and serving the old bundle, has it handed over and refused TRUST_ROLLBACK. Either way
// the release the frozen metadata hides is refused TRUST_UNSIGNED in a signed receipt.
test('through a real agent: old versions offered are not fetched; the old bundle served for newer ones is refused TRUST_ROLLBACK; the update is refused TRUST_UNSIGNED', { timeout: 120_000 }, async (t) => {
  const h = await tufAgentHost(t);
  const old = repoBundle(h.repo);
  const oldVersions = versionsOf(old);
  addAgentWeb(h, '1.1.0');
  const r = await serveBundle(h, repoBundle(h.repo));
  assert.ok(r.ok && r.timestampVersion > oldVersions.timestampVersion, JSON.stringify(r));
  const before = await trustSnapshot(h);
  // Offered the old versions: the agent does not ask for the bundle, the helper trusts what it did.
  const asked = h.cp.trustAsked.length;
  h.cp.trustBundle = old;
  h.cp.trust = oldVersions;
  await keepsHeartbeating(h);
  await keepsHeartbeating(h);
  assert.equal(h.cp.trustAsked.length, asked, 'the agent fetched no bundle for versions older than the helper trusts');
  assert.deepEqual(await trustSnapshot(h), before);
  // Offered newer versions, the old bundle served: the helper refuses it.
  await assertBundleRefused(h, old, 'TRUST_ROLLBACK', /timestamp version \d+ is less than current version/);
  addAgentWeb(h, '1.2.0');
  await assertUpdateRefusedViaAgent(h, entry(h, '1.2.0', 'run-1.web.1'), 'TRUST_UNSIGNED', /web\/1\.2\.0\/manifest\.json is not a target the app\.web delegation signs/);
});
