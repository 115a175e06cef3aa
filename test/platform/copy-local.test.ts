import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, promises as fsp, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { StewardError } from '../../src/core/errors.js';
import { copyLocalToFile, copyLocalToMemory } from '../../src/platform/copy-local.js';

let tmp: string;
let n = 0;
const dest = () => path.join(tmp, `copy-${n++}.tgz`);
const body = randomBytes(100 * 1024);
let src: string;

before(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'steward-copy-'));
  src = path.join(tmp, 'web-1.0.0.tgz');
  await fsp.writeFile(src, body);
});
after(() => rmSync(tmp, { recursive: true, force: true }));

async function assertRefused(p: Promise<unknown>, code: string, re: RegExp, destFile: string): Promise<void> {
  const err = await p.then(
    () => assert.fail('expected the copy to fail'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof StewardError, String(err));
  assert.equal(err.code, code, err.message);
  assert.match(err.message, re);
  assert.equal(existsSync(destFile), false);
}

test('a regular file is copied with the sha512 of its bytes', async () => {
  const destFile = dest();
  const r = await copyLocalToFile({ path: src, destFile, maxBytes: body.length });
  assert.deepEqual(r, { bytes: body.length, integrity: `sha512-${createHash('sha512').update(body).digest('base64')}` });
  assert.deepEqual(await fsp.readFile(destFile), body);
  assert.equal((await fsp.stat(destFile)).mode & 0o777, 0o600);
});

test('a symlink to a regular file is refused', async () => {
  const link = path.join(tmp, 'link.tgz');
  await fsp.symlink(src, link);
  const destFile = dest();
  await assertRefused(copyLocalToFile({ path: link, destFile, maxBytes: body.length }), 'FETCH_FAILED', /not a regular file/, destFile);
});

test('a fifo is refused without waiting for a writer', { timeout: 5000 }, async () => {
  const fifo = path.join(tmp, 'fifo.tgz');
  execFileSync('mkfifo', [fifo]);
  const destFile = dest();
  await assertRefused(copyLocalToFile({ path: fifo, destFile, maxBytes: body.length }), 'FETCH_FAILED', /not a regular file/, destFile);
});

test('a directory is refused', async () => {
  const destFile = dest();
  await assertRefused(copyLocalToFile({ path: tmp, destFile, maxBytes: body.length }), 'FETCH_FAILED', /not a regular file/, destFile);
});

test('a file larger than maxBytes is refused', async () => {
  const destFile = dest();
  await assertRefused(copyLocalToFile({ path: src, destFile, maxBytes: body.length - 1 }), 'FETCH_FAILED', /larger/, destFile);
});

test('a missing file is NOT_FOUND', async () => {
  const destFile = dest();
  await assertRefused(copyLocalToFile({ path: path.join(tmp, 'absent.tgz'), destFile, maxBytes: 10 }), 'NOT_FOUND', /does not exist/, destFile);
});

// copyLocalToMemory: the same source rules and refusals (the same reason codes and messages),
// into one Buffer instead of a file.
async function refusedInMemory(opts: Parameters<typeof copyLocalToMemory>[0], code: string, re: RegExp): Promise<void> {
  const err = await copyLocalToMemory(opts).then(
    () => assert.fail('expected the read to fail'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof StewardError, String(err));
  assert.equal(err.code, code, err.message);
  assert.match(err.message, re);
}

test('copyLocalToMemory reads a regular file into a Buffer of its own with the sha512 of its bytes', async () => {
  const r = await copyLocalToMemory({ path: src, maxBytes: body.length });
  assert.deepEqual({ bytes: r.bytes, integrity: r.integrity }, { bytes: body.length, integrity: `sha512-${createHash('sha512').update(body).digest('base64')}` });
  assert.deepEqual(r.archive, body);
  assert.equal(r.archive.byteOffset, 0);
  assert.equal(r.archive.buffer.byteLength, body.length, 'the Buffer owns its whole ArrayBuffer (it is transferred to the worker)');
});

test('copyLocalToMemory of a file shorter than the allowed size gives a Buffer exactly as long as the file', async () => {
  const r = await copyLocalToMemory({ path: src, maxBytes: body.length + 5000 });
  assert.equal(r.bytes, body.length);
  assert.deepEqual(r.archive, body);
  assert.equal(r.archive.buffer.byteLength, body.length);
});

test('copyLocalToMemory refuses what copyLocalToFile refuses, with the same messages', async () => {
  const link = path.join(tmp, 'link-memory.tgz');
  await fsp.symlink(src, link);
  await refusedInMemory({ path: link, maxBytes: body.length }, 'FETCH_FAILED', /is a symbolic link, not a regular file/);
  const fifo = path.join(tmp, 'fifo-memory.tgz');
  execFileSync('mkfifo', [fifo]);
  await refusedInMemory({ path: fifo, maxBytes: body.length }, 'FETCH_FAILED', /not a regular file/);
  await refusedInMemory({ path: tmp, maxBytes: body.length }, 'FETCH_FAILED', /not a regular file/);
  await refusedInMemory({ path: src, maxBytes: body.length - 1 }, 'FETCH_FAILED', new RegExp(`larger than the allowed size \\(${body.length} > ${body.length - 1} bytes\\)`));
  await refusedInMemory({ path: src, maxBytes: body.length + 1, exactSize: true }, 'FETCH_FAILED', /shorter than the manifest's size/);
  await refusedInMemory({ path: path.join(tmp, 'absent.tgz'), maxBytes: 10 }, 'NOT_FOUND', /does not exist/);
});
