import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { appLogFile } from '../../../src/core/paths.js';
import { systemClock } from '../../../src/platform/clock.js';
import { readRunRecord, writeRunRecord } from '../../../src/helper/runners/run-record.js';
import type { AppRunner } from '../../../src/helper/runners/runner.js';
import { capAppLogs } from '../../../src/helper/supervisor/cap-logs.js';
import { supervisedHost } from '../../helpers/supervised-host.js';

// capAppLogs: each process app's log held to its logMaxBytes, under the app's lock, with the
// record's logOffset (where the current process's output starts) moved by the cut.

const runner: AppRunner = {
  start: async () => Promise.reject(new Error('not started here')),
  stop: async () => {},
  isAlive: async () => false,
};

const line = (i: number) => `line ${String(i).padStart(6, '0')} ${'y'.repeat(50)}\n`;

async function hostWithLog(t: { after(fn: () => void): void }, lines: number) {
  const { host, ctx } = await supervisedHost({ web: { logMaxBytes: 65536 }, small: {} }, runner, systemClock);
  t.after(() => host.cleanup());
  const file = appLogFile(ctx.paths, 'web');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, Array.from({ length: lines }, (_, i) => line(i)).join(''));
  return { ctx, file };
}

const record = (logOffset: number) => ({ schemaVersion: 1 as const, app: 'web', expected: 'running' as const, version: '1.0.0', process: null, startedAt: 1, logOffset });

test("a cut moves the record's logOffset with it, to 0 when the current process's first lines were cut", async (t) => {
  const { ctx, file } = await hostWithLog(t, 4000);
  const size = statSync(file).size;
  const offset = size - 300 * 63;
  await writeRunRecord(ctx.paths, record(offset));
  await capAppLogs(ctx);
  const kept = readFileSync(file, 'utf8');
  const cut = size - kept.length;
  assert.ok(kept.length <= 32768, `cut to its newest half: ${kept.length}`);
  assert.equal((await readRunRecord(ctx.paths, 'web'))?.logOffset, offset - cut, 'the same byte of output');
  assert.ok(kept.slice(offset - cut).startsWith(line(3700)), 'which is where the current process began');

  await writeRunRecord(ctx.paths, record(10));
  writeFileSync(file, Array.from({ length: 4000 }, (_, i) => line(i)).join(''));
  await capAppLogs(ctx);
  assert.equal((await readRunRecord(ctx.paths, 'web'))?.logOffset, 0, 'its start is gone: from the start of what is kept');
});

test('a log of an app whose lock is held is left for a later look; the default cap is 50 MB', async (t) => {
  const { ctx, file } = await hostWithLog(t, 4000);
  const size = statSync(file).size;
  const held = ctx.locks.tryAcquire('web', { attemptId: 'u1', op: 'update', phase: 'probe', startedAt: 0 });
  await capAppLogs(ctx);
  assert.equal(statSync(file).size, size, 'not cut while an update holds the app');
  held.release();
  await capAppLogs(ctx);
  assert.ok(statSync(file).size < size);
  assert.equal(ctx.config.apps.small?.runner === 'process' && ctx.config.apps.small.logMaxBytes, 50 * 1024 * 1024);
});
