import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addWeb, assertUpdateRefused, refresh, tufHost, tufUpdate, web } from '../../helpers/tuf-host.js';

// docs/design.md §21.3: an update the agent hands on saying it could not fetch the newer metadata
// the control plane offered (`trustFetchFailed`). A refusal that metadata might have lifted
// (TRUST_UNSIGNED, TRUST_NOT_DIRECTED, TRUST_EXPIRED) is FETCH_FAILED naming both, the node's
// trouble; every other refusal keeps its code, and what the stored metadata vouches for still
// installs. It lets nothing through that it would not let through without it.
test('trustFetchFailed makes a refusal newer metadata might lift FETCH_FAILED, and nothing else', { timeout: 120_000 }, async (t) => {
  const h = await tufHost(t, { first: '1.1.0' });
  const why = 'CONTROL_PLANE_UNREACHABLE: http://127.0.0.1:1/v1/trust/bundle: no complete answer within 30000 ms';
  // 1.2.0 is signed, but the host has not the metadata that says so.
  addWeb(h, '1.2.0');
  await assertUpdateRefused(h, tufUpdate(h, '1.2.0', 'run-1.web.1', { trustFetchFailed: why }), 'run-1.web.1', 'FETCH_FAILED', '1.1.0', '1.2.0', /web\/1\.2\.0\/manifest\.json is not a target the app\.web delegation signs \(TRUST_UNSIGNED\); the control plane offered newer TUF metadata than this host trusts, and the agent could not fetch it: CONTROL_PLANE_UNREACHABLE: .*no complete answer within 30000 ms/);
  await assertUpdateRefused(h, tufUpdate(h, '1.2.0', 'run-2.web.1'), 'run-2.web.1', 'TRUST_UNSIGNED', '1.1.0', '1.2.0');
  // A directive for another node: FETCH_FAILED too (a rotated-in director is newer metadata).
  await assertUpdateRefused(h, tufUpdate(h, '1.2.0', 'run-3.web.1', { nodeId: 'node-other', trustFetchFailed: why }), 'run-3.web.1', 'FETCH_FAILED', '1.1.0', '1.2.0', /\(TRUST_NOT_DIRECTED\)/);
  // Below the floor, a signed release without downgrade.json: DOWNGRADE_REFUSED still.
  addWeb(h, '1.0.0');
  await refresh(h);
  await assertUpdateRefused(h, tufUpdate(h, '1.0.0', 'run-4.web.1', { trustFetchFailed: why }), 'run-4.web.1', 'DOWNGRADE_REFUSED', '1.1.0', '1.0.0');
  // What the stored metadata vouches for installs, whatever the agent says.
  const up = await tufUpdate(h, '1.2.0', 'run-5.web.1', { trustFetchFailed: why });
  assert.equal('outcome' in up && up.outcome, 'active', JSON.stringify(up));
  assert.equal((await web(h)).current, '1.2.0');
});
