import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { StewardError } from '../../src/core/errors.js';
import { ensureFreeSpace, freeBytes } from '../../src/platform/disk.js';
import { skipUnlessCI } from '../helpers/skip.js';

// Mounts a 1 MiB tmpfs (root only) so that free space is known and does not move.
function withTmpfs(t: { skip(msg: string): void }, fn: (dir: string) => Promise<void>): Promise<void> | void {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    rmSync(dir, { recursive: true, force: true });
    skipUnlessCI(t, 'mounting a tmpfs needs root');
    return;
  }
  return fn(dir).finally(() => {
    execFileSync('umount', [dir]);
    rmSync(dir, { recursive: true, force: true });
  });
}

test('free bytes agree with df for the same folder', async () => {
  const dir = os.tmpdir();
  const free = await freeBytes(dir);
  const df = Number(execFileSync('df', ['-B1', '--output=avail', dir], { encoding: 'utf8' }).trim().split('\n').at(-1));
  // Other writers share the file system: allow 64 MiB of drift between the two reads.
  assert.ok(Math.abs(free - df) < 64 * 1024 * 1024, `statfs ${free} vs df ${df}`);
});

test('free bytes of an empty 1 MiB tmpfs are 1 MiB', (t) =>
  withTmpfs(t, async (dir) => {
    assert.equal(await freeBytes(dir), 1024 * 1024);
  }));

test('enough space for the need plus the reserve passes', (t) =>
  withTmpfs(t, async (dir) => {
    await ensureFreeSpace(dir, 512 * 1024, 512 * 1024);
  }));

test('a need that eats into the reserve is DISK_FULL with the numbers', (t) =>
  withTmpfs(t, async (dir) => {
    await assert.rejects(ensureFreeSpace(dir, 512 * 1024 + 1, 512 * 1024), (err: unknown) => {
      assert.ok(err instanceof StewardError);
      assert.equal(err.code, 'DISK_FULL');
      assert.equal(err.message, `need 524289 bytes plus the 524288-byte reserve on ${dir}, only 1048576 free`);
      return true;
    });
  }));

test('a folder that does not exist is an IO_ERROR', async () => {
  await assert.rejects(freeBytes('/nonexistent/steward-disk'), (err: unknown) => err instanceof StewardError && err.code === 'IO_ERROR');
});
