import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addWeb, assertRefreshRefused, assertUpdateRefused, bundleOf, tufHost, tufUpdate, web } from '../helpers/tuf-host.js';
import { addAgentWeb, assertBundleRefused, assertUpdateRefusedViaAgent, entry, repoBundle, tufAgentHost, webStatus } from '../helpers/tuf-agent-host.js';

// A fast-forward: one stolen key of web's delegation (its threshold is 2 of 3) signs web
// 999.0.0, so that the host would take it and refuse every real release below it ever after.
// The delegation one signature short verifies nothing: the bundle is refused TRUST_SIGNATURE,
// and 999.0.0 is not installed.
test('a version 999.0.0 signed by one key of a delegation that needs two is not installed', { timeout: 120_000 }, async (t) => {
  const h = await tufHost(t);
  addWeb(h, '999.0.0', { signers: 1 });
  await assertRefreshRefused(h, bundleOf(h.repo), 'TRUST_SIGNATURE', /app\.web was signed by 1\/2 keys/);
  await assertUpdateRefused(h, tufUpdate(h, '999.0.0', 'run-1.web.1'), 'run-1.web.1', 'TRUST_UNSIGNED', '1.0.0', '999.0.0');
  const st = await web(h);
  assert.deepEqual([st.current, st.highestActive], ['1.0.0', '1.0.0'], 'the floor did not move to 999.0.0');
});

// The same through a real agent: the hostile control plane offers newer versions, serves the
// bundle whose app.web one key signed, and asks for 999.0.0. The helper refuses the bundle the
// agent hands it (TRUST_SIGNATURE), then the update in a signed receipt (TRUST_UNSIGNED).
test('through a real agent: the bundle is refused TRUST_SIGNATURE and 999.0.0 ends in a refused receipt TRUST_UNSIGNED', { timeout: 120_000 }, async (t) => {
  const h = await tufAgentHost(t);
  addAgentWeb(h, '999.0.0', { signers: 1 });
  await assertBundleRefused(h, repoBundle(h.repo), 'TRUST_SIGNATURE', /app\.web was signed by 1\/2 keys/);
  await assertUpdateRefusedViaAgent(h, entry(h, '999.0.0', 'run-1.web.1'), 'TRUST_UNSIGNED', /web\/999\.0\.0\/manifest\.json is not a target the app\.web delegation signs/);
  const st = await webStatus(h);
  assert.deepEqual([st.current, st.highestActive], ['1.0.0', '1.0.0'], 'the floor did not move to 999.0.0');
});
