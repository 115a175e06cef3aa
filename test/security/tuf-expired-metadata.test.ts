import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { addWeb, assertRefreshRefused, assertUpdateRefused, bundleOf, refresh, rotate, tufHost, tufUpdate } from '../helpers/tuf-host.js';
import { addAgentWeb, assertBundleRefused, assertUpdateRefusedViaAgent, entry, repoBundle, serveBundle, tufAgentHost } from '../helpers/tuf-agent-host.js';

const DAY = 86_400_000;

// Expired metadata: a timestamp (a day) or a root past its expiry vouches for nothing, whether a
// bundle brings it or the host holds it (a host cut off from fresh timestamps stops installing
// within a day: the bound on a freeze).
test('an expired timestamp or root is refused TRUST_EXPIRED, in a bundle and in the store; nothing changes', { timeout: 120_000 }, async (t) => {
  const h = await tufHost(t);
  addWeb(h, '1.1.0', { publish: false });
  h.repo.publish(Date.now() - 2 * DAY);
  await assertRefreshRefused(h, bundleOf(h.repo), 'TRUST_EXPIRED', /timestamp\.json is expired/);

  // A root rotation to a root that has expired.
  const files = new Map(h.repo.files);
  rotate(h.repo, { expires: Date.now() - 1000 });
  h.repo.publish(Date.now());
  await assertRefreshRefused(h, bundleOf(h.repo), 'TRUST_EXPIRED', /root\.json is expired/);
  h.repo.files.clear();
  for (const [n, b] of files) h.repo.files.set(n, b);
  h.repo.roots.pop();

  // A timestamp that expires in 3 s, trusted; an update after that is refused.
  h.repo.publish(Date.now() - DAY + 3000);
  const r = await refresh(h);
  assert.ok(r.timestampVersion);
  await sleep(3500);
  await assertUpdateRefused(h, tufUpdate(h, '1.1.0', 'run-1.web.1'), 'run-1.web.1', 'TRUST_EXPIRED', '1.0.0', '1.1.0', /timestamp\.json is expired/);
});

// The same through a real agent: the hostile control plane offers newer versions and serves a
// bundle whose timestamp expired, then one that rotates to an expired root: each refused
// TRUST_EXPIRED. Then a timestamp that expires seconds later is trusted (the control plane goes
// quiet, offering nothing newer): once it has expired, the update it asks for ends in a signed
// refused receipt TRUST_EXPIRED.
test('through a real agent: an expired timestamp or root is refused TRUST_EXPIRED; an update after the trusted timestamp expired ends in a refused receipt TRUST_EXPIRED', { timeout: 120_000 }, async (t) => {
  const h = await tufAgentHost(t);
  addAgentWeb(h, '1.1.0', { publish: false });
  h.repo.publish(Date.now() - 2 * DAY);
  await assertBundleRefused(h, repoBundle(h.repo), 'TRUST_EXPIRED', /timestamp\.json is expired/);
  const files = new Map(h.repo.files);
  rotate(h.repo, { expires: Date.now() - 1000 });
  h.repo.publish(Date.now());
  await assertBundleRefused(h, repoBundle(h.repo), 'TRUST_EXPIRED', /root\.json is expired/);
  h.repo.files.clear();
  for (const [n, b] of files) h.repo.files.set(n, b);
  h.repo.roots.pop();
  // A timestamp that expires in 15 s (room for the agent to hand it over on a loaded machine),
  // trusted through the agent; the update once it has expired.
  const expires = Date.now() + 15_000;
  h.repo.publish(expires - DAY);
  const r = await serveBundle(h, repoBundle(h.repo));
  assert.ok(r.ok, JSON.stringify(r));
  await sleep(Math.max(0, expires + 500 - Date.now()));
  await assertUpdateRefusedViaAgent(h, entry(h, '1.1.0', 'run-1.web.1'), 'TRUST_EXPIRED', /timestamp\.json is expired/);
});
