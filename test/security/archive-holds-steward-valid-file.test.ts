import { test } from 'node:test';
import assert from 'node:assert/strict';
import { expectExtracts, expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { gzipTar, makeReleaseTar, type TarEntrySpec } from '../fixtures/tar-writer.js';
import { assertNothingStaged, receiptOf, signedHost, updateOverHelperSock } from '../helpers/helper-sock-attempts.js';

// Issue 15 item 6: `.steward-valid` is the marker steward writes last into versions/<ver>/ and
// trusts when it reads it back. An archive holding its own (a forged, valid-looking marker)
// used to be extracted and renamed into versions/ with it, so until steward's marker replaced
// it, and for good after a crash in between, versions/<ver> carried the archive's word for its
// integrity. It is refused when its header is read, before anything is renamed into versions/.

const forged = JSON.stringify({
  schemaVersion: 1,
  tarballIntegrity: `sha512-${'A'.repeat(86)}==`,
  treeDigest: `sha256-${'B'.repeat(43)}=`,
  signed: true,
  keyId: null,
  version: '1.0.0',
  stagedAt: 0,
});

async function extractIn(extra: TarEntrySpec[], pattern?: RegExp): Promise<void> {
  const sb = await makeSandbox();
  try {
    const tgz = gzipTar(makeReleaseTar('web', '1.0.0', extra));
    if (pattern) await expectRefused(sb, tgz, pattern);
    else await expectExtracts(sb, tgz);
  } finally {
    await removeSandbox(sb);
  }
}

test('a .steward-valid file, ./.steward-valid, or a symlink by that name at the root is refused as its header is read', async () => {
  const rule = /entry ".*\.steward-valid": \.steward-valid is the name of steward's marker; no archive may hold it/;
  await extractIn([{ path: '.steward-valid', content: forged }], rule);
  await extractIn([{ path: './.steward-valid', content: forged }], rule);
  await extractIn([{ path: '.steward-valid', type: 'symlink', linkpath: 'steward-release.json' }], rule);
  // Even as the last entry, after everything else was written: nothing of it reaches the tree.
  await extractIn([{ path: 'server.js', content: 'x' }, { path: '.steward-valid', content: forged }], rule);
  // Deeper down the name is not steward's: a release may ship one.
  await extractIn([{ path: 'docs/.steward-valid', content: 'not a marker' }]);
});

test('an update over helper.sock of a signed release holding a forged .steward-valid ends in a refused receipt (UNSAFE_ARCHIVE); versions/ never holds it', { timeout: 60_000 }, async (t) => {
  const s = await signedHost(t);
  const attemptId = 'rollout-4.web.1';
  const tgz = gzipTar(makeReleaseTar('web', '1.0.0', [{ path: 'server.js', content: 'x' }, { path: '.steward-valid', content: forged }]));
  const r = await updateOverHelperSock(s, 'web', '1.0.0', tgz, attemptId);
  assert.equal(r.code, 3, r.stderr + r.stdout);
  assert.equal(r.json.error.code, 'UNSAFE_ARCHIVE', r.json.error.message);
  assert.match(r.json.error.message, /\.steward-valid/);
  const receipt = await receiptOf(s, attemptId);
  assert.equal(receipt.outcome, 'refused');
  assert.equal(receipt.reason.code, 'UNSAFE_ARCHIVE');
  // Refused by the extraction: the tree never left its 0700 staging folder.
  assert.doesNotMatch(s.helper.stderr(), /staged app=web version=1\.0\.0/);
  assertNothingStaged(s, 'web', '1.0.0');
});
