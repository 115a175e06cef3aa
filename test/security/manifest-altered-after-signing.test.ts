import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertStageRefused } from '../helpers/stage-harness.js';
import { makeReleaseKey, manifestFor, sri } from '../helpers/host.js';
import { releaseTgz } from '../fixtures/releases.js';

test('a manifest altered after signing is refused with SIGNATURE_INVALID', async () => {
  const signedFor = releaseTgz('web', '2.0.0');
  const evil = releaseTgz('web', '2.0.0', { 'server.js': 'require("child_process").exec("id")\n' });
  const err = await assertStageRefused(evil, 'SIGNATURE_INVALID', (s) => {
    const key = makeReleaseKey(s.host, ['web']);
    const env = key.sign(manifestFor('web', '2.0.0', signedFor));
    // Swap in the evil tarball's integrity and size, keeping the original signature.
    const payload = JSON.parse(Buffer.from(env.payload, 'base64').toString('utf8'));
    payload.integrity = sri(evil);
    payload.size = evil.length;
    const altered = { ...env, payload: Buffer.from(JSON.stringify(payload)).toString('base64') };
    return { manifest: altered, allowUnsigned: false, integrity: undefined };
  });
  assert.match(err.message, /signature does not verify/);
});

test('a manifest whose payload is re-encoded with the same meaning is still refused (bytes are verified, never re-canonicalized)', async () => {
  const tgz = releaseTgz('web', '2.0.0');
  await assertStageRefused(tgz, 'SIGNATURE_INVALID', (s) => {
    const key = makeReleaseKey(s.host, ['web']);
    const env = key.sign(manifestFor('web', '2.0.0', tgz));
    const payload = JSON.parse(Buffer.from(env.payload, 'base64').toString('utf8'));
    const spaced = Buffer.from(JSON.stringify(payload, null, 1)).toString('base64');
    return { manifest: { ...env, payload: spaced }, allowUnsigned: false, integrity: undefined };
  });
});
