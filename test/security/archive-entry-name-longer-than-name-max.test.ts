import { test } from 'node:test';
import assert from 'node:assert/strict';
import { expectExtracts, expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { gzipTar, makeReleaseTar, type TarEntrySpec } from '../fixtures/tar-writer.js';
import { assertNothingStaged, receiptOf, signedHost, updateOverHelperSock } from '../helpers/helper-sock-attempts.js';

// Issue 15 item 5: a name longer than the kernel's NAME_MAX (255 bytes) cannot be created.
// It used to reach mkdir/open and fail there as IO_ERROR, with no receipt, so a rollout of such
// a signed release waited for its verdict timeout and then blamed the node. It is refused up
// front as UNSAFE_ARCHIVE, and the attempt ends in a refused receipt.

const long = 'n'.repeat(256);

// Extracts `extra` (after a valid steward-release.json) in a fresh sandbox.
async function extractIn(extra: TarEntrySpec[], pattern?: RegExp): Promise<void> {
  const sb = await makeSandbox();
  try {
    const tgz = gzipTar(makeReleaseTar('web', '1.0.0', extra));
    if (pattern) await expectRefused(sb, tgz, pattern);
    else assert.equal((await expectExtracts(sb, tgz)).entries, 1 + extra.length);
  } finally {
    await removeSandbox(sb);
  }
}

test('a file, a folder or a symlink target with a 256-byte name is refused before anything is written; 255 bytes extract', async () => {
  const nameMax = /256 bytes, over the kernel's 255-byte NAME_MAX/;
  await extractIn([{ path: long, content: 'x' }], nameMax);
  await extractIn([{ path: `lib/${long}/x.js`, content: 'x' }], nameMax);
  // Multi-byte characters count in bytes: 128 two-byte letters are 256 bytes.
  await extractIn([{ path: 'é'.repeat(128), content: 'x' }], nameMax);
  await extractIn([{ path: 'link', type: 'symlink', linkpath: long }], /symlink target a path component is 256 bytes/);
  await extractIn([{ path: 'link', type: 'symlink', linkpath: `${long}/../x` }], /symlink target a path component is 256 bytes/);
  await extractIn([{ path: 'n'.repeat(255), content: 'x' }]);
});

test('an update over helper.sock of a signed release holding a 256-byte name ends in a refused receipt (UNSAFE_ARCHIVE) and leaves nothing staged', { timeout: 60_000 }, async (t) => {
  const s = await signedHost(t);
  const attemptId = 'rollout-1.web.1';
  const r = await updateOverHelperSock(s, 'web', '1.0.0', gzipTar(makeReleaseTar('web', '1.0.0', [{ path: `static/${long}.css`, content: 'x' }])), attemptId);
  assert.equal(r.code, 3, r.stderr + r.stdout);
  assert.equal(r.json.error.code, 'UNSAFE_ARCHIVE', r.json.error.message);
  const receipt = await receiptOf(s, attemptId);
  assert.equal(receipt.outcome, 'refused');
  assert.equal(receipt.reason.code, 'UNSAFE_ARCHIVE');
  assert.match(receipt.reason.message, /NAME_MAX/);
  assert.equal(receipt.targetVersion, '1.0.0');
  assertNothingStaged(s, 'web', '1.0.0');
});
