import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertStageRefused } from '../helpers/stage-harness.js';
import { makeReleaseKey, manifestFor, sri } from '../helpers/host.js';
import { releaseTgz } from '../fixtures/releases.js';

test('an unsigned tarball whose integrity does not match is refused with INTEGRITY_MISMATCH', async () => {
  const tgz = releaseTgz('web', '2.0.0');
  const other = releaseTgz('web', '2.0.0', { 'x.js': 'other' });
  const err = await assertStageRefused(tgz, 'INTEGRITY_MISMATCH', { integrity: sri(other) });
  assert.match(err.message, /does not match integrity/);
});

test('a signed manifest whose integrity does not match the bytes is refused with INTEGRITY_MISMATCH', async () => {
  const tgz = releaseTgz('web', '2.0.0');
  const signedFor = releaseTgz('web', '2.0.0', { 'y.js': 'the real one' });
  await assertStageRefused(tgz, 'INTEGRITY_MISMATCH', (s) => {
    const key = makeReleaseKey(s.host, ['web']);
    return { manifest: key.sign(manifestFor('web', '2.0.0', signedFor, { size: tgz.length })), allowUnsigned: false, integrity: undefined };
  });
});
