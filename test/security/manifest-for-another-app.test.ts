import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertStageRefused } from '../helpers/stage-harness.js';
import { makeReleaseKey, manifestFor } from '../helpers/host.js';
import { releaseTgz } from '../fixtures/releases.js';

test("a manifest for another app, signed by this app's key, is refused with RELEASE_INVALID", async () => {
  const tgz = releaseTgz('web', '2.0.0');
  const err = await assertStageRefused(tgz, 'RELEASE_INVALID', (s) => {
    const key = makeReleaseKey(s.host, ['web']);
    return { manifest: key.sign(manifestFor('api', '2.0.0', tgz)), allowUnsigned: false, integrity: undefined };
  });
  assert.match(err.message, /for app api, not web/);
});

test('a manifest for another version is refused with RELEASE_INVALID', async () => {
  const tgz = releaseTgz('web', '2.0.0');
  await assertStageRefused(tgz, 'RELEASE_INVALID', (s) => {
    const key = makeReleaseKey(s.host, ['web']);
    return { manifest: key.sign(manifestFor('web', '2.0.1', tgz)), allowUnsigned: false, integrity: undefined };
  });
});
