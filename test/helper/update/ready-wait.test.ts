import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, constants as C, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hostPaths } from '../../../src/core/paths.js';
import type { Clock } from '../../../src/platform/clock.js';
import { ensureAppFds } from '../../../src/helper/runners/app-fds.js';
import { openReadyWait } from '../../../src/helper/update/ready-wait.js';

// The activation's wait for readiness (docs/design.md §17) on a fake clock: the newline ends it,
// health.timeoutMs without one is APP_NOT_READY, and an exit first is READY_FD_CLOSED.

function fakeClock() {
  let t = 0;
  let sleepers: Array<{ until: number; resolve: () => void }> = [];
  let onSleep: () => void = () => undefined;
  const clock: Clock = {
    now: () => t,
    monotonic: () => t,
    sleep: (ms, signal) =>
      new Promise<void>((resolve, reject) => {
        const e = { until: t + ms, resolve };
        sleepers.push(e);
        onSleep();
        signal?.addEventListener('abort', () => {
          sleepers = sleepers.filter((x) => x !== e);
          reject(signal.reason);
        }, { once: true });
      }),
  };
  return {
    clock,
    asleep: () => new Promise<void>((r) => (sleepers.length > 0 ? r() : (onSleep = r))),
    advance(ms: number) {
      t += ms;
      for (const x of sleepers.filter((s) => s.until <= t)) x.resolve();
      sleepers = sleepers.filter((s) => s.until > t);
    },
  };
}

async function fifo(t: { after(fn: () => void): void }): Promise<string> {
  const keep = setInterval(() => undefined, 1000);
  const root = mkdtempSync(path.join(os.tmpdir(), 'steward-ready-wait-'));
  t.after(() => {
    clearInterval(keep);
    rmSync(root, { recursive: true, force: true });
  });
  return (await ensureAppFds(hostPaths(root), 'web', { ready: 'fd' }, null)).ready as string;
}

test('the newline ends the wait, however far the timeout is', async (t) => {
  const p = await fifo(t);
  const { clock } = fakeClock();
  const w = openReadyWait(p, clock);
  const app = openSync(p, C.O_RDWR);
  t.after(() => closeSync(app));
  const r = w.wait(60_000, new Promise(() => {}));
  writeSync(app, 'starting...\n');
  assert.deepEqual(await r, { ok: true });
});

test('no newline within the timeout is APP_NOT_READY, naming the timeout', async (t) => {
  const p = await fifo(t);
  const fc = fakeClock();
  const w = openReadyWait(p, fc.clock);
  const app = openSync(p, C.O_RDWR);
  t.after(() => closeSync(app));
  writeSync(app, 'no newline here');
  const r = w.wait(1500, new Promise(() => {}));
  await fc.asleep();
  fc.advance(1499);
  fc.advance(1);
  const got = await r;
  assert.equal(got.ok, false);
  assert.equal(!got.ok && got.code, 'APP_NOT_READY');
  assert.match(!got.ok ? got.reason : '', /within 1500 ms/);
});

test('an exit before the newline is READY_FD_CLOSED, before the timeout', async (t) => {
  const p = await fifo(t);
  const { clock } = fakeClock();
  const w = openReadyWait(p, clock);
  // A writer that is still open elsewhere (a child the app left): only the exit tells.
  const app = openSync(p, C.O_RDWR);
  t.after(() => closeSync(app));
  const got = await w.wait(60_000, Promise.resolve({ code: 1, signal: null }));
  assert.equal(got.ok, false);
  assert.equal(!got.ok && got.code, 'READY_FD_CLOSED');
  assert.match(!got.ok ? got.reason : '', /exited before/);
});

test('a newline left by a process before this start is not taken as this one\'s', async (t) => {
  const p = await fifo(t);
  const fc = fakeClock();
  const old = openSync(p, C.O_RDWR);
  writeSync(old, '\n');
  const w = openReadyWait(p, fc.clock);
  closeSync(old);
  const app = openSync(p, C.O_RDWR);
  t.after(() => closeSync(app));
  const r = w.wait(1000, new Promise(() => {}));
  await fc.asleep();
  fc.advance(1000);
  const got = await r;
  assert.equal(!got.ok && got.code, 'APP_NOT_READY');
});
