import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertStageRefused } from '../helpers/stage-harness.js';
import { makeReleaseKey, manifestFor } from '../helpers/host.js';
import { releaseTgz } from '../fixtures/releases.js';

test('an expired manifest is refused with MANIFEST_EXPIRED', async () => {
  const tgz = releaseTgz('web', '2.0.0');
  const err = await assertStageRefused(tgz, 'MANIFEST_EXPIRED', (s) => {
    const key = makeReleaseKey(s.host, ['web']);
    return { manifest: key.sign(manifestFor('web', '2.0.0', tgz, { expires: Date.now() - 1000 })), allowUnsigned: false, integrity: undefined };
  });
  assert.match(err.message, /expired at/);
});
