import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addWeb, assertRefreshRefused, assertUpdateRefused, bundleOf, refresh, trustedVersions, tufHost, tufUpdate, web } from '../helpers/tuf-host.js';

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
