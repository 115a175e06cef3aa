import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DOMAINS, parsePrivateKey, signEnvelope } from '../../src/platform/keys.js';
import { makeReleaseKey } from '../helpers/host.js';
import { receiptOf } from '../helpers/helper-sock-attempts.js';
import { addWeb, assertUpdateRefused, downgradeBytes, refresh, tufHost, tufUpdate, web } from '../helpers/tuf-host.js';

// Under TUF a downgrade is the app's delegation's word (docs/design.md §18, §21): below the floor,
// the target `web/<version>/downgrade.json` must exist and the request's authorization be its
// bytes, for exactly that version, not expired. The control plane alone cannot take a host back.
test('under tuf, going below the floor needs the target downgrade.json of the delegation; with it the floor goes down to exactly that version', { timeout: 120_000 }, async (t) => {
  const h = await tufHost(t, { first: '1.5.0' });
  addWeb(h, '1.1.0');
  await refresh(h);
  const key = parsePrivateKey(makeReleaseKey().privatePem);
  const auth = (bytes: Buffer) => signEnvelope(DOMAINS.downgrade, JSON.parse(bytes.toString('utf8')), key);
  const good = downgradeBytes('1.1.0');
  await assertUpdateRefused(h, tufUpdate(h, '1.1.0', 'run-1.web.1', { downgrade: auth(good) }), 'run-1.web.1', 'DOWNGRADE_REFUSED', '1.5.0', '1.1.0', /signs no web\/1\.1\.0\/downgrade\.json/);
  // The delegation signs the authorization of 1.1.0 now.
  addWeb(h, '1.1.0', { downgradeBytes: good });
  await refresh(h);
  await assertUpdateRefused(h, tufUpdate(h, '1.1.0', 'run-2.web.1'), 'run-2.web.1', 'DOWNGRADE_REFUSED', '1.5.0', '1.1.0', /no downgrade authorization came/);
  await assertUpdateRefused(h, tufUpdate(h, '1.1.0', 'run-3.web.1', { downgrade: auth(downgradeBytes('1.1.0', Date.now() + 3_600_000)) }), 'run-3.web.1', 'DOWNGRADE_REFUSED', '1.5.0', '1.1.0', /is not the target/);
  const back = await tufUpdate(h, '1.1.0', 'run-4.web.1', { downgrade: auth(good) });
  assert.equal('outcome' in back && back.outcome, 'active', JSON.stringify(back));
  const receipt = await receiptOf(h, 'run-4.web.1');
  assert.equal(receipt.reason.code, 'DOWNGRADE_AUTHORIZED');
  assert.match(receipt.reason.message, /by the target web\/1\.1\.0\/downgrade\.json of the app\.web delegation/);
  const st = await web(h);
  assert.deepEqual([st.current, st.highestActive], ['1.1.0', '1.1.0']);
});
