import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertStageRefused } from '../helpers/stage-harness.js';
import { makeReleaseKey, manifestFor } from '../helpers/host.js';
import { releaseTgz } from '../fixtures/releases.js';

test('a manifest signed by a key nobody trusts is refused with SIGNATURE_INVALID', async () => {
  const tgz = releaseTgz('web', '2.0.0');
  const err = await assertStageRefused(tgz, 'SIGNATURE_INVALID', (s) => {
    makeReleaseKey(s.host, ['web']); // a trusted key exists, but it is not the signer
    const stranger = makeReleaseKey();
    return { manifest: stranger.sign(manifestFor('web', '2.0.0', tgz)), allowUnsigned: false, integrity: undefined };
  });
  assert.match(err.message, /not trusted for app web/);
});
