import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addWeb, assertRefreshRefused, assertUpdateRefused, bundleOf, refresh, tufHost, tufUpdate } from '../helpers/tuf-host.js';
import { addAgentWeb, assertBundleRefused, assertUpdateRefusedViaAgent, entry, repoBundle, serveBundle, tufAgentHost } from '../helpers/tuf-agent-host.js';

// A metadata rollback: a control plane (its online snapshot and timestamp keys) that publishes
// a new snapshot naming an older version of web's delegation, to take back a release it signed
// (or bring back one it removed). The snapshot may name no targets version below what the host
// trusts: TRUST_ROLLBACK.
test("a new snapshot naming an older version of an app's delegation is refused TRUST_ROLLBACK; nothing changes", { timeout: 120_000 }, async (t) => {
  const h = await tufHost(t);
  const olderWeb = h.repo.apps.get('web')!;
  addWeb(h, '1.1.0');
  await refresh(h);
  h.repo.apps.set('web', olderWeb);
  h.repo.publish(Date.now());
  await assertRefreshRefused(h, bundleOf(h.repo), 'TRUST_ROLLBACK', /New version \d+ of app\.web\.json is less than current version/);
  // 1.1.0 is still what the trusted metadata signs; and a 1.2.0 the rolled-back set would hide stays unknown.
  addWeb(h, '1.2.0', { publish: false });
  await assertUpdateRefused(h, tufUpdate(h, '1.2.0', 'run-1.web.1'), 'run-1.web.1', 'TRUST_UNSIGNED', '1.0.0', '1.2.0');
});

// The same through a real agent: the host takes the metadata that signs 1.1.0, then the hostile
// control plane offers newer versions and serves the rolled-back set (a new snapshot naming
// app.web one version back): refused TRUST_ROLLBACK; a 1.2.0 only it would name ends in a signed
// refused receipt TRUST_UNSIGNED.
test('through a real agent: the rolled-back bundle is refused TRUST_ROLLBACK; the update ends in a refused receipt TRUST_UNSIGNED', { timeout: 120_000 }, async (t) => {
  const h = await tufAgentHost(t);
  const olderWeb = h.repo.apps.get('web')!;
  addAgentWeb(h, '1.1.0');
  const r = await serveBundle(h, repoBundle(h.repo));
  assert.ok(r.ok, JSON.stringify(r));
  h.repo.apps.set('web', olderWeb);
  h.repo.publish(Date.now());
  await assertBundleRefused(h, repoBundle(h.repo), 'TRUST_ROLLBACK', /New version \d+ of app\.web\.json is less than current version/);
  addAgentWeb(h, '1.2.0', { publish: false });
  await assertUpdateRefusedViaAgent(h, entry(h, '1.2.0', 'run-1.web.1'), 'TRUST_UNSIGNED', /is not a target the app\.web delegation signs/);
});
