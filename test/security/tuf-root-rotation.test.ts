import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addWeb, assertRefreshRefused, assertUpdateRefused, bundleOf, refresh, rotate, trustedVersions, tufHost, tufUpdate, web } from '../helpers/tuf-host.js';
import { newKey } from '../helpers/tuf-repo.js';

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
