import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertStageRefused } from '../helpers/stage-harness.js';
import { makeReleaseKey, manifestFor } from '../helpers/host.js';
import { releaseTgz } from '../fixtures/releases.js';

test("a manifest signed by another app's key is refused with SIGNATURE_INVALID", async () => {
  const tgz = releaseTgz('web', '2.0.0');
  const err = await assertStageRefused(tgz, 'SIGNATURE_INVALID', (s) => {
    makeReleaseKey(s.host, ['web']);
    const apiKey = makeReleaseKey(s.host, ['api']); // trusted, but only for app api
    return { manifest: apiKey.sign(manifestFor('web', '2.0.0', tgz)), allowUnsigned: false, integrity: undefined };
  });
  assert.match(err.message, /not trusted for app web/);
});
