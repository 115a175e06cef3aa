import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addWeb, assertRefreshRefused, assertUpdateRefused, bundleOf, tufHost, tufUpdate } from '../helpers/tuf-host.js';
import { addAgentWeb, assertBundleRefused, assertUpdateRefusedViaAgent, entry, keepsHeartbeating, liedVersion, repoBundle, trustSnapshot, tufAgentHost } from '../helpers/tuf-agent-host.js';

// Endless data: a metadata file far over any real one's size, to exhaust the host's memory or
// disk. tuf-js reads each file up to its cap (16 KiB a timestamp, 512 KiB a root, the length
// the timestamp names for a snapshot): over it, TRUST_TOO_LARGE, and nothing is trusted.
test('a bundle file over its cap is refused TRUST_TOO_LARGE; nothing changes', { timeout: 120_000 }, async (t) => {
  const h = await tufHost(t);
  addWeb(h, '1.1.0');
  const pad = (b64: string, n: number) => Buffer.concat([Buffer.from(b64, 'base64'), Buffer.alloc(n, 0x20)]).toString('base64');
  const big = bundleOf(h.repo);
  big.files['timestamp.json'] = pad(big.files['timestamp.json']!, 20 * 1024);
  await assertRefreshRefused(h, big, 'TRUST_TOO_LARGE', /Max length reached/);
  const root = bundleOf(h.repo);
  root.files['2.root.json'] = pad(root.files['1.root.json']!, 600 * 1024);
  await assertRefreshRefused(h, root, 'TRUST_TOO_LARGE', /Max length reached/);
  const snap = bundleOf(h.repo);
  const v = h.repo.snapshot.signed.version;
  snap.files[`${v}.snapshot.json`] = pad(snap.files[`${v}.snapshot.json`]!, 1024);
  await assertRefreshRefused(h, snap, 'TRUST_TOO_LARGE', /Max length reached/);
  await assertUpdateRefused(h, tufUpdate(h, '1.1.0', 'run-1.web.1'), 'run-1.web.1', 'TRUST_UNSIGNED', '1.0.0', '1.1.0');
});

// The same through a real agent: the hostile control plane offers newer versions and serves
// bundles under the agent's 8 MiB cap whose one file is over the helper's cap for it (a
// timestamp, a root, a snapshot): the agent hands each over and the helper refuses it
// TRUST_TOO_LARGE; 1.1.0 then ends in a signed refused receipt TRUST_UNSIGNED. A bundle over 8
// MiB the agent stops reading at its cap (agent/trust-bundle.ts): it never reaches the helper,
// and the update asked for meanwhile ends in a refused receipt FETCH_FAILED that names the fetch
// (the node's trouble, as in tuf-slow-retrieval). That case comes last: until a bundle is trusted
// again, every update the agent hands on says its fetch failed.
test('through a real agent: a file over its cap is refused TRUST_TOO_LARGE; a bundle over 8 MiB stops at the agent and the update ends FETCH_FAILED', { timeout: 120_000 }, async (t) => {
  const h = await tufAgentHost(t);
  addAgentWeb(h, '1.1.0');
  const pad = (b64: string, n: number) => Buffer.concat([Buffer.from(b64, 'base64'), Buffer.alloc(n, 0x20)]).toString('base64');
  const big = repoBundle(h.repo);
  big.files['timestamp.json'] = pad(big.files['timestamp.json']!, 20 * 1024);
  await assertBundleRefused(h, big, 'TRUST_TOO_LARGE', /Max length reached/);
  const root = repoBundle(h.repo);
  root.files['2.root.json'] = pad(root.files['1.root.json']!, 600 * 1024);
  await assertBundleRefused(h, root, 'TRUST_TOO_LARGE', /Max length reached/);
  const snap = repoBundle(h.repo);
  const v = h.repo.snapshot.signed.version;
  snap.files[`${v}.snapshot.json`] = pad(snap.files[`${v}.snapshot.json`]!, 1024);
  await assertBundleRefused(h, snap, 'TRUST_TOO_LARGE', /Max length reached/);
  await assertUpdateRefusedViaAgent(h, entry(h, '1.1.0', 'run-1.web.1'), 'TRUST_UNSIGNED', /is not a target the app\.web delegation signs/);

  // Over 8 MiB: a 9 MiB file (base64 of spaces) in an otherwise real bundle.
  const huge = repoBundle(h.repo);
  huge.files['2.root.json'] = Buffer.alloc(9 * 1024 * 1024, 0x20).toString('base64');
  const before = await trustSnapshot(h);
  const offered = { rootVersion: 2, timestampVersion: liedVersion() };
  const from = h.agent.stderr().length;
  h.cp.trustBundle = huge;
  h.cp.trust = offered;
  await h.agent.waitFor('the agent gives up on the bundle over its cap', () => /trust refresh to root 2 timestamp \d+ failed code=CONTROL_PLANE_UNREACHABLE: .*the answer is larger than 8388608 bytes/.test(h.agent.stderr().slice(from)), 30_000);
  assert.doesNotMatch(h.agent.stderr().slice(from), /TRUST_TOO_LARGE|trust refreshed/, 'nothing of it was handed to the helper');
  assert.deepEqual(await trustSnapshot(h), before);
  await keepsHeartbeating(h);
  const receipt = await assertUpdateRefusedViaAgent(h, entry(h, '1.1.0', 'run-2.web.1'), 'FETCH_FAILED', /the agent could not fetch it: CONTROL_PLANE_UNREACHABLE: .*larger than 8388608 bytes/);
  assert.ok(receipt.seq > 0);
});
