import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, constants as C, lstatSync, mkdtempSync, openSync, readFileSync, rmSync, symlinkSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hostPaths } from '../../src/core/paths.js';
import { appFdPath, ensureAppFds } from '../../src/helper/runners/app-fds.js';
import { openFifoReader } from '../../src/helper/supervisor/fifo-reader.js';
import { openReadyWait } from '../../src/helper/update/ready-wait.js';
import { systemClock } from '../../src/platform/clock.js';

// An app's readiness and watchdog FIFOs (docs/design.md §17) are the app's to write: the helper,
// as root, must not block on them, keep what is written, take bytes without a newline as one, or
// follow whatever is planted at their path.

function scratchPaths(t: { after(fn: () => void): void }) {
  // The readers never keep a helper up (unref'd): this keeps the test's own loop up meanwhile.
  const keep = setInterval(() => undefined, 1000);
  t.after(() => clearInterval(keep));
  const root = mkdtempSync(path.join(os.tmpdir(), 'steward-fifo-attack-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  return hostPaths(root);
}

test('a FIFO flooded with megabytes without a newline is neither ready nor a watchdog feed, and its end is heard', async (t) => {
  const paths = scratchPaths(t);
  const fds = await ensureAppFds(paths, 'web', { ready: 'fd' }, null);
  const ready = openReadyWait(fds.ready as string, systemClock);
  const heard: string[] = [];
  let done: () => void = () => undefined;
  const ended = new Promise<void>((r) => (done = r));
  const reader = openFifoReader(fds.ready as string, { newline: () => heard.push('newline'), closed: () => done() });
  t.after(() => reader.close());
  // The app's side: read-write, as the runners open it; non-blocking writes of 8 MiB in all,
  // each taken as the helper reads (a full pipe says EAGAIN, and the writer tries again).
  const w = openSync(fds.ready as string, C.O_RDWR | C.O_NONBLOCK);
  const junk = Buffer.alloc(65_536, 'x');
  let written = 0;
  while (written < 8 << 20) {
    try {
      written += writeSync(w, junk);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
      await new Promise((r) => setImmediate(r));
    }
    await new Promise((r) => setImmediate(r));
  }
  closeSync(w);
  await ended;
  assert.deepEqual(heard, [], 'no newline was ever seen');
  const r = await ready.wait(60_000, new Promise(() => {}));
  assert.equal(r.ok, false);
  assert.equal(!r.ok && r.code, 'READY_FD_CLOSED');
});

test('opening a FIFO that no app has opened yet returns at once, and no end is reported before a writer came', async (t) => {
  const paths = scratchPaths(t);
  const fds = await ensureAppFds(paths, 'web', { watchdogMs: 1000 }, null);
  const heard: string[] = [];
  const reader = openFifoReader(fds.watchdog as string, { newline: () => heard.push('newline'), closed: () => heard.push('closed') });
  t.after(() => reader.close());
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(heard, [], 'a FIFO nobody opened is not an ended one');
});

test('a symlink planted at a FIFO path is replaced, never followed', async (t) => {
  const paths = scratchPaths(t);
  await ensureAppFds(paths, 'web', { ready: 'fd' }, null);
  const p = appFdPath(paths, 'web', 'ready');
  const victim = path.join(paths.root, 'victim');
  writeFileSync(victim, 'keep me');
  unlinkSync(p);
  symlinkSync(victim, p);
  await ensureAppFds(paths, 'web', { ready: 'fd' }, null);
  assert.ok(lstatSync(p).isFIFO(), 'the path is a FIFO again');
  assert.equal(readFileSync(victim, 'utf8'), 'keep me');
  // And a reader refuses to open through one.
  unlinkSync(p);
  symlinkSync(victim, p);
  assert.throws(() => openFifoReader(p, { newline: () => undefined, closed: () => undefined }), /ELOOP/);
});
