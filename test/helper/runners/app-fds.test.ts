import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { lstatSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hostPaths } from '../../../src/core/paths.js';
import { appFdEnv, appFdPath, ensureAppFds, removeAppFds, wrapWithFdOpener } from '../../../src/helper/runners/app-fds.js';
import { openFifoReader } from '../../../src/helper/supervisor/fifo-reader.js';

// The FIFOs of an app's readiness and watchdog fds (docs/design.md §17): made 0600 in a folder of
// root's that the app cannot write, whatever was planted at their paths replaced; the sh wrapper
// the systemd runner puts in the unit hands them to the app as fds 3 and 4.

function scratchPaths(t: { after(fn: () => void): void }) {
  const root = mkdtempSync(path.join(os.tmpdir(), 'steward-app-fds-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  return hostPaths(root);
}

test('the FIFOs are made 0600 in 0711 folders, numbered 3 then 4, and removed again', async (t) => {
  const paths = scratchPaths(t);
  const fds = await ensureAppFds(paths, 'web', { ready: 'fd', watchdogMs: 2000 }, null);
  for (const kind of ['ready', 'watchdog'] as const) {
    const st = lstatSync(appFdPath(paths, 'web', kind));
    assert.ok(st.isFIFO(), kind);
    assert.equal(st.mode & 0o777, 0o600, kind);
  }
  assert.equal(lstatSync(paths.appFdsDir).mode & 0o777, 0o711);
  assert.equal(lstatSync(path.dirname(fds.ready as string)).mode & 0o777, 0o711);
  assert.deepEqual(appFdEnv(fds), { STEWARD_READY_FD: '3', STEWARD_WATCHDOG_FD: '4', STEWARD_WATCHDOG_MS: '2000' });
  assert.deepEqual(appFdEnv(await ensureAppFds(paths, 'web', { watchdogMs: 500 }, null)), { STEWARD_WATCHDOG_FD: '3', STEWARD_WATCHDOG_MS: '500' });
  assert.throws(() => lstatSync(appFdPath(paths, 'web', 'ready')), /ENOENT/, 'a FIFO no longer wanted goes');
  removeAppFds(paths, 'web');
  assert.throws(() => lstatSync(path.dirname(fds.ready as string)), /ENOENT/);
});

test('a regular file planted at a FIFO path is replaced by a FIFO', async (t) => {
  const paths = scratchPaths(t);
  await ensureAppFds(paths, 'web', { ready: 'fd' }, null);
  const p = appFdPath(paths, 'web', 'ready');
  rmSync(p);
  writeFileSync(p, 'not a fifo');
  await ensureAppFds(paths, 'web', { ready: 'fd' }, null);
  assert.ok(lstatSync(p).isFIFO());
});

test('the sh wrapper of the systemd runner hands the FIFOs to the app as fds 3 and 4, and the reader hears its newline and its end', async (t) => {
  const paths = scratchPaths(t);
  const fds = await ensureAppFds(paths, 'web', { ready: 'fd', watchdogMs: 1000 }, null);
  const heard: string[] = [];
  let done: () => void = () => undefined;
  const ended = new Promise<void>((r) => (done = r));
  const reader = openFifoReader(fds.watchdog as string, { newline: () => heard.push('newline'), closed: () => { heard.push('closed'); done(); } });
  t.after(() => reader.close());
  const app = `require('fs').writeSync(Number(process.env.STEWARD_WATCHDOG_FD), 'x\\n'); require('fs').writeSync(Number(process.env.STEWARD_READY_FD), '\\n')`;
  const cmd = wrapWithFdOpener([process.execPath, '-e', app], fds);
  assert.equal(cmd[0], '/bin/sh');
  const child = spawn(cmd[0] as string, cmd.slice(1), { env: { ...appFdEnv(fds), PATH: '/usr/bin:/bin' }, stdio: 'inherit' });
  const code = await new Promise((r) => child.once('exit', r));
  assert.equal(code, 0);
  await ended;
  assert.deepEqual(heard, ['newline', 'closed']);
});
