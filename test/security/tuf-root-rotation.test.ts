import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addWeb, assertRefreshRefused, assertUpdateRefused, bundleOf, refresh, rotate, trustedVersions, tufHost, tufUpdate, web } from '../helpers/tuf-host.js';
import { newKey } from '../helpers/tuf-repo.js';
import { addAgentWeb, assertBundleRefused, assertUpdateRefusedViaAgent, entry, receiptOf, repoBundle, serveBundle, tufAgentHost, webStatus } from '../helpers/tuf-agent-host.js';

// Root rotation across two versions, with a host that missed the first: the bundle brings every
// root after the one it trusts, and tuf-js walks them one version at a time, each signed by the
// previous root's threshold and its own. A bundle that skips a root is not trusted; the director
// key rotated with the root: the old director's directives are refused from then on.
test('a host on root 1 follows a rotation to root 3 it missed a step of; the old director is no longer obeyed', { timeout: 120_000 }, async (t) => {
  const h = await tufHost(t);
  const oldDirector = h.repo.keys.director;
  rotate(h.repo, { rootKeys: [newKey(), newKey(), newKey()], timestamp: newKey() });
  rotate(h.repo, { rootKeys: [newKey(), newKey(), newKey()], director: newKey() });
  addWeb(h, '1.1.0');
  await assertRefreshRefused(h, bundleOf(h.repo, (n) => n !== '2.root.json'), 'TRUST_SIGNATURE');
  assert.deepEqual((await trustedVersions(h)).rootVersion, 1);
  // The director key was rotated: a directive of the old one is refused.
  const newDirector = h.repo.keys.director;
  const r = await refresh(h);
  assert.equal(r.rootVersion, 3);
  h.repo.keys.director = oldDirector;
  await assertUpdateRefused(h, tufUpdate(h, '1.1.0', 'run-1.web.1'), 'run-1.web.1', 'TRUST_NOT_DIRECTED', '1.0.0', '1.1.0', /unknown-key/);
  h.repo.keys.director = newDirector;
  const ok = await tufUpdate(h, '1.1.0', 'run-2.web.1');
  assert.equal('outcome' in ok && ok.outcome, 'active', JSON.stringify(ok));
  assert.equal((await web(h)).current, '1.1.0');
});

// The same through a real agent: the hostile control plane offers root 3 and serves a bundle
// without 2.root.json: refused TRUST_SIGNATURE, the host stays on root 1. The whole bundle then
// takes it to root 3; an update whose directive the old director key signed ends in a signed
// refused receipt TRUST_NOT_DIRECTED, one of the new director installs.
test('through a real agent: a bundle that skips a root is refused; the host follows the whole rotation and obeys only the new director', { timeout: 120_000 }, async (t) => {
  const h = await tufAgentHost(t);
  const oldDirector = h.repo.keys.director;
  rotate(h.repo, { rootKeys: [newKey(), newKey(), newKey()], timestamp: newKey() });
  rotate(h.repo, { rootKeys: [newKey(), newKey(), newKey()], director: newKey() });
  addAgentWeb(h, '1.1.0');
  const skipped = repoBundle(h.repo);
  delete skipped.files['2.root.json'];
  await assertBundleRefused(h, skipped, 'TRUST_SIGNATURE');
  const r = await serveBundle(h, repoBundle(h.repo));
  assert.deepEqual(r, { ok: true, rootVersion: 3, timestampVersion: h.repo.timestamp.signed.version });
  await assertUpdateRefusedViaAgent(h, entry(h, '1.1.0', 'run-1.web.1', { director: oldDirector }), 'TRUST_NOT_DIRECTED', /unknown-key/);
  h.cp.desired = [entry(h, '1.1.0', 'run-2.web.1')];
  const ok = await receiptOf(h, 'run-2.web.1');
  assert.equal(ok.outcome, 'active', JSON.stringify(ok));
  assert.equal((await webStatus(h)).current, '1.1.0');
});
