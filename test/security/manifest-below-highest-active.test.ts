import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertStageRefused } from '../helpers/stage-harness.js';
import { makeReleaseKey, manifestFor } from '../helpers/host.js';
import { releaseTgz } from '../fixtures/releases.js';
import { readAppState, writeAppState } from '../../src/helper/state/app-state.js';

test('a signed release below the highest active version is refused with DOWNGRADE_REFUSED (rollback attack)', async () => {
  const tgz = releaseTgz('web', '2.0.0');
  const err = await assertStageRefused(tgz, 'DOWNGRADE_REFUSED', async (s) => {
    const key = makeReleaseKey(s.host, ['web']);
    const state = await readAppState(s.host.paths, 'web');
    await writeAppState(s.host.paths, 'web', { ...state, highestActive: '3.0.0' });
    return { manifest: key.sign(manifestFor('web', '2.0.0', tgz)), allowUnsigned: false, integrity: undefined };
  });
  assert.match(err.message, /below 3\.0\.0/);
});
