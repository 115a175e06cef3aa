import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../../src/core/errors.js';
import { extractArchive } from '../../src/platform/tarball.js';
import { DEFAULT_LIMITS, expectExtracts, expectRefused, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';
import { assertNothingStaged, receiptOf, signedHost, updateOverHelperSock } from '../helpers/helper-sock-attempts.js';

// Issue 15 item 5: an entry path within the 4,096-byte cap of the archive rules may still not
// fit the kernel's PATH_MAX (4,096 bytes with its NUL) once the folder it is extracted into
// (appDir/.staging/<attemptId>/tree/) is put in front. It used to fail in mkdir or open as
// IO_ERROR, with no receipt. The real prefix is counted up front: UNSAFE_ARCHIVE, before any
// byte is written, and a refused receipt.

// A relative path of exactly `bytes` bytes: 200-byte folder names, then the rest as a file name.
function pathOfBytes(bytes: number): string {
  const parts: string[] = [];
  let left = bytes;
  while (left > 200 + 1 + 1) {
    parts.push('d'.repeat(200));
    left -= 201;
  }
  parts.push('f'.repeat(left));
  const p = parts.join('/');
  assert.equal(Buffer.byteLength(p), bytes);
  return p;
}

test('under its extraction folder, a path of 4,095 bytes extracts and one of 4,096 is refused before anything is written', async () => {
  const fits = await makeSandbox();
  try {
    const prefix = Buffer.byteLength(path.resolve(fits.dest)) + 1;
    const r = await expectExtracts(fits, gzipTar(makeReleaseTar('web', '1.0.0', [{ path: pathOfBytes(4095 - prefix), content: 'x' }])));
    assert.ok(r.entries > 2, 'the deep file and its folders are there');
  } finally {
    await removeSandbox(fits);
  }
  const over = await makeSandbox();
  try {
    const prefix = Buffer.byteLength(path.resolve(over.dest)) + 1;
    const tgz = gzipTar(makeReleaseTar('web', '1.0.0', [{ path: pathOfBytes(4096 - prefix), content: 'x' }]));
    await expectRefused(over, tgz, new RegExp(`path is 4096 bytes once under the ${prefix}-byte folder it is extracted into, over the kernel's 4096-byte PATH_MAX`));
  } finally {
    await removeSandbox(over);
  }
});

test('a path that fits the extraction folder but not the longer versions/<ver> it is renamed to is refused', async () => {
  const sb = await makeSandbox();
  try {
    const prefix = Buffer.byteLength(path.resolve(sb.dest)) + 1;
    const finalDir = `${sb.dest}-renamed-into-a-longer-folder`;
    await fsp.writeFile(sb.archive, gzipTar(makeReleaseTar('web', '1.0.0', [{ path: pathOfBytes(4095 - prefix), content: 'x' }])));
    await assert.rejects(extractArchive({ archivePath: sb.archive, dest: sb.dest, finalDir, limits: DEFAULT_LIMITS }), (err: unknown) => {
      assert.ok(err instanceof StewardError, String(err));
      assert.equal(err.code, 'UNSAFE_ARCHIVE', err.message);
      assert.match(err.message, new RegExp(`under the ${Buffer.byteLength(finalDir) + 1}-byte folder`));
      return true;
    });
  } finally {
    await removeSandbox(sb);
  }
});

test('an update over helper.sock of a signed release with a 4,090-byte path ends in a refused receipt (UNSAFE_ARCHIVE) and leaves nothing staged', { timeout: 60_000 }, async (t) => {
  const s = await signedHost(t);
  const attemptId = 'rollout-2.web.1';
  // Within the archive rules' 4,096-byte cap; not once the host's staging prefix is added.
  const tgz = gzipTar(makeReleaseTar('web', '1.0.0', [{ path: pathOfBytes(4090), content: 'x' }]));
  const r = await updateOverHelperSock(s, 'web', '1.0.0', tgz, attemptId);
  assert.equal(r.code, 3, r.stderr + r.stdout);
  assert.equal(r.json.error.code, 'UNSAFE_ARCHIVE', r.json.error.message);
  assert.match(r.json.error.message, /PATH_MAX/);
  const receipt = await receiptOf(s, attemptId);
  assert.equal(receipt.outcome, 'refused');
  assert.equal(receipt.reason.code, 'UNSAFE_ARCHIVE');
  assertNothingStaged(s, 'web', '1.0.0');
});
