import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import path from 'node:path';
import { expectExtracts, expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { gzipTar, makeReleaseTar, type TarEntrySpec } from '../fixtures/tar-writer.js';
import { assertNothingStaged, receiptOf, signedHost, updateOverHelperSock } from '../helpers/helper-sock-attempts.js';

// Issue 15 item 5: a pax mtime (or atime) that node-tar cannot make a Date of (1e300 seconds,
// or not a number) used to reach futimes(2) and fail there with EINVAL, as IO_ERROR, with no
// receipt. Decision: refused up front as UNSAFE_ARCHIVE (no honest tar writes one); a time that
// is a valid date, however far, extracts (the kernel clamps it to what the file system holds).

const outOfRange = /its modification or access time is out of range \(not a valid date\)/;

async function extractIn(extra: TarEntrySpec[], pattern?: RegExp): Promise<string> {
  const sb = await makeSandbox();
  try {
    const tgz = gzipTar(makeReleaseTar('web', '1.0.0', extra));
    if (pattern) await expectRefused(sb, tgz, pattern);
    else await expectExtracts(sb, tgz);
    return pattern ? '' : new Date(statSync(path.join(sb.dest, extra[0]?.path ?? '')).mtimeMs).toISOString();
  } finally {
    await removeSandbox(sb);
  }
}

test('an mtime or atime out of range is refused before anything is written; a far but valid one extracts', async () => {
  await extractIn([{ path: 'far-future.js', content: 'x', pax: { mtime: '1e300' } }], outOfRange);
  await extractIn([{ path: 'not-a-number.js', content: 'x', pax: { mtime: 'soon' } }], outOfRange);
  await extractIn([{ path: 'bad-atime.js', content: 'x', pax: { atime: '-1e300' } }], outOfRange);
  await extractIn([{ path: 'lib/', type: 'dir', pax: { mtime: '1e300' } }], outOfRange);
  // Year 5138: a valid date, clamped by the kernel to what this file system holds.
  const far = await extractIn([{ path: 'year-5138.js', content: 'x', pax: { mtime: '99999999999' } }]);
  assert.ok(Date.parse(far) > Date.parse('2100-01-01'), far);
  const old = await extractIn([{ path: 'before-1970.js', content: 'x', pax: { mtime: '-86400' } }]);
  assert.equal(old, '1969-12-31T00:00:00.000Z');
});

test('an update over helper.sock of a signed release with an mtime out of range ends in a refused receipt (UNSAFE_ARCHIVE) and leaves nothing staged', { timeout: 60_000 }, async (t) => {
  const s = await signedHost(t);
  const attemptId = 'rollout-3.web.1';
  const tgz = gzipTar(makeReleaseTar('web', '1.0.0', [{ path: 'server.js', content: 'x', pax: { mtime: '1e300' } }]));
  const r = await updateOverHelperSock(s, 'web', '1.0.0', tgz, attemptId);
  assert.equal(r.code, 3, r.stderr + r.stdout);
  assert.equal(r.json.error.code, 'UNSAFE_ARCHIVE', r.json.error.message);
  const receipt = await receiptOf(s, attemptId);
  assert.equal(receipt.outcome, 'refused');
  assert.equal(receipt.reason.code, 'UNSAFE_ARCHIVE');
  assert.match(receipt.reason.message, /out of range/);
  assertNothingStaged(s, 'web', '1.0.0');
});
