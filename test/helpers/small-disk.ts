import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { skipUnlessCI } from './skip.js';

// A real full disk for tests: a host on a 16 MiB tmpfs, so ENOSPC comes from the kernel.

const MiB = 1024 * 1024;

// Mounts a 16 MiB tmpfs for the host (`root` on it); `scratch` (for release tarballs) stays
// outside it. Root only: without root the test is skipped with the reason, and under CI=true it
// fails instead.
export function withSmallDisk(t: Pick<TestContext, 'skip'>, fn: (root: string, scratch: string) => Promise<void>): Promise<void> | void {
  const base = mkdtempSync(path.join(os.tmpdir(), 'steward-full-disk-'));
  const disk = path.join(base, 'disk');
  const scratch = path.join(base, 'scratch');
  mkdirSync(disk, { mode: 0o755 });
  mkdirSync(scratch);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m,mode=0755', 'tmpfs', disk], { stdio: 'pipe' });
  } catch (err) {
    rmSync(base, { recursive: true, force: true });
    skipUnlessCI(t, `mounting a tmpfs needs root (${(err as Error).message.split('\n')[0]})`);
    return;
  }
  return fn(path.join(disk, 'root'), scratch).finally(() => {
    execFileSync('umount', ['--lazy', disk]);
    rmSync(base, { recursive: true, force: true });
  });
}

// Fills the file system of `dir` to the last byte with one file; returns its path.
export function fillDisk(dir: string): string {
  const file = path.join(dir, 'filler');
  const fd = openSync(file, 'w');
  try {
    for (const size of [MiB, 64 * 1024, 4096]) {
      const chunk = Buffer.alloc(size, 1);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
      }
    }
  } finally {
    closeSync(fd);
  }
  return file;
}
