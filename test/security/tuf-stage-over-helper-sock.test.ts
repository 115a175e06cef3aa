import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { Readable } from 'node:stream';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { versionDir } from '../../src/core/paths.js';
import { manifestFor } from '../helpers/host.js';
import { addWeb, envelopeOf, refresh, refusedWith, tufHost, web, webRelease } from '../helpers/tuf-host.js';

// A stage over helper.sock under TUF (docs/design.md §21.3): held to the app's delegation as an
// update is (no directive: nothing is activated). A release the delegation does not sign is not
// staged, whichever key signed its envelope.
test('under tuf a stage over helper.sock takes only a target of the delegation', { timeout: 120_000 }, async (t) => {
  const h = await tufHost(t);
  addWeb(h, '1.1.0');
  await refresh(h);
  const stage = (version: string, manifestBytes: Buffer, tgz: Buffer) =>
    h.helperSock.stage({ app: 'web', version, manifest: envelopeOf(manifestBytes), upload: tgz.length }, { upload: { size: tgz.length, stream: Readable.from([tgz]) } });
  const other = webRelease('1.2.0');
  await assert.rejects(stage('1.2.0', canonicalBytes(manifestFor('web', '1.2.0', other)), other), refusedWith('TRUST_UNSIGNED'));
  assert.equal(existsSync(versionDir(h.host.paths, 'web', '1.2.0')), false);
  const ok = await stage('1.1.0', h.manifests.get('1.1.0')!, h.tgz.get('1.1.0')!);
  assert.equal(ok.version, '1.1.0');
  assert.equal(existsSync(versionDir(h.host.paths, 'web', '1.1.0')), true);
  assert.equal((await web(h)).current, '1.0.0', 'staged, not activated');
});
