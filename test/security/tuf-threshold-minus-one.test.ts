import { test } from 'node:test';
import { addWeb, assertRefreshRefused, assertUpdateRefused, bundleOf, rotate, tufHost, tufUpdate } from '../helpers/tuf-host.js';
import { newKey } from '../helpers/tuf-repo.js';
import { addAgentWeb, assertBundleRefused, assertUpdateRefusedViaAgent, entry, repoBundle, tufAgentHost } from '../helpers/tuf-agent-host.js';

// A threshold minus one: one root key (of 2 needed) signs a new root that hands the fleet to
// the attacker's keys; one key of web's delegation (of 2 needed) signs a release. Neither is
// trusted: TRUST_SIGNATURE, and nothing changes.
test('a root or a delegation signed by one key short of its threshold is refused TRUST_SIGNATURE; nothing changes', { timeout: 120_000 }, async (t) => {
  const h = await tufHost(t);
  const mine = [newKey(), newKey(), newKey()];
  const saved = new Map(h.repo.files);
  const keys = { ...h.repo.keys };
  // Signed by one old root key and all three new ones: the old root's threshold (2) is not met.
  rotate(h.repo, { rootKeys: mine, timestamp: newKey(), signers: [h.repo.keys.root[0]!, ...mine] });
  h.repo.publish(Date.now());
  await assertRefreshRefused(h, bundleOf(h.repo), 'TRUST_SIGNATURE', /root was signed by 1\/2 keys/);
  h.repo.files.clear();
  for (const [n, b] of saved) h.repo.files.set(n, b);
  h.repo.roots.pop();
  Object.assign(h.repo.keys, keys);

  addWeb(h, '1.1.0', { signers: 1 });
  await assertRefreshRefused(h, bundleOf(h.repo), 'TRUST_SIGNATURE', /app\.web was signed by 1\/2 keys/);
  await assertUpdateRefused(h, tufUpdate(h, '1.1.0', 'run-1.web.1'), 'run-1.web.1', 'TRUST_UNSIGNED', '1.0.0', '1.1.0');
});

// The same through a real agent: the hostile control plane offers root 2 (then newer versions)
// and serves each bundle; the helper refuses what the agent hands it (TRUST_SIGNATURE), and 1.1.0,
// which one delegation key signed, ends in a signed refused receipt TRUST_UNSIGNED.
test('through a real agent: a root or a delegation one key short is refused TRUST_SIGNATURE; the update ends in a refused receipt TRUST_UNSIGNED', { timeout: 120_000 }, async (t) => {
  const h = await tufAgentHost(t);
  const mine = [newKey(), newKey(), newKey()];
  const saved = new Map(h.repo.files);
  const keys = { ...h.repo.keys };
  rotate(h.repo, { rootKeys: mine, timestamp: newKey(), signers: [h.repo.keys.root[0]!, ...mine] });
  h.repo.publish(Date.now());
  await assertBundleRefused(h, repoBundle(h.repo), 'TRUST_SIGNATURE', /root was signed by 1\/2 keys/);
  h.repo.files.clear();
  for (const [n, b] of saved) h.repo.files.set(n, b);
  h.repo.roots.pop();
  Object.assign(h.repo.keys, keys);
  addAgentWeb(h, '1.1.0', { signers: 1 });
  await assertBundleRefused(h, repoBundle(h.repo), 'TRUST_SIGNATURE', /app\.web was signed by 1\/2 keys/);
  await assertUpdateRefusedViaAgent(h, entry(h, '1.1.0', 'run-1.web.1'), 'TRUST_UNSIGNED', /is not a target the app\.web delegation signs/);
});
