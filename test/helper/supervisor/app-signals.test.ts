// The helper's signal counts (docs/design.md §19): durable counts since an activation, counted
// concurrently without a lost update; CPU and RSS of a process tree from /proc, carried across
// restarts; the status's `signals` built from them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hostConfigSchema } from '../../../src/core/config-schema.js';
import { hostPaths, stateFile, versionDir } from '../../../src/core/paths.js';
import { ensureLayout } from '../../../src/helper/layout.js';
import { countSignal, readSignalCounts, resetSignalCounts } from '../../../src/helper/supervisor/app-signals.js';
import { CpuCarry, parseProcStat, parseVmRss, readProcessTreeUsage } from '../../../src/helper/supervisor/process-usage.js';
import { signalsOf } from '../../../src/helper/ops/status-signals.js';

async function host(t: { after(fn: () => void): void }) {
  const root = mkdtempSync(path.join(os.tmpdir(), 'steward-signals-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const paths = hostPaths(root);
  await ensureLayout(paths);
  return paths;
}

test('counts start at the activation, add up without a lost update when counted at once, and start again at the next activation', async (t) => {
  const paths = await host(t);
  assert.equal(await readSignalCounts(paths, 'web'), null);
  await resetSignalCounts(paths, 'web', 1000);
  await Promise.all([
    ...Array.from({ length: 20 }, () => countSignal(paths, 'web', 'livenessFailures', 5)),
    countSignal(paths, 'web', 'watchdogKills', 5),
    countSignal(paths, 'web', 'oomKills', 5),
    countSignal(paths, 'web', 'oomKills', 5),
  ]);
  assert.deepEqual(await readSignalCounts(paths, 'web'), { schemaVersion: 1, app: 'web', since: 1000, livenessFailures: 20, watchdogKills: 1, oomKills: 2 });
  await resetSignalCounts(paths, 'web', 2000);
  assert.deepEqual(await readSignalCounts(paths, 'web'), { schemaVersion: 1, app: 'web', since: 2000, livenessFailures: 0, watchdogKills: 0, oomKills: 0 });
});

test('an app no activation counted starts its counts at the helper start; a corrupt file reads as none', async (t) => {
  const paths = await host(t);
  await countSignal(paths, 'api', 'livenessFailures', 777);
  assert.equal((await readSignalCounts(paths, 'api'))?.since, 777);
  writeFileSync(stateFile(paths, 'web').replace(/\.json$/, '.signals.json'), '{"schemaVersion":1,"app":"web","since":"x"}');
  assert.equal(await readSignalCounts(paths, 'web'), null);
});

test('/proc stat lines parse after the last parenthesis of the command name', () => {
  const line = '4242 (a) b) (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 1 0 100 1000000 300 18446744073709551615';
  assert.deepEqual(parseProcStat(line), { ppid: 1, cpuTicks: 310 });
  assert.equal(parseProcStat('garbage'), null);
  assert.equal(parseVmRss('Name:\tnode\nVmRSS:\t   51200 kB\n'), 51200 * 1024);
  assert.equal(parseVmRss('Name:\tkthreadd\n'), 0);
});

test('the usage of a process tree counts its children; a pid that is gone reads as null', async (t) => {
  const child = spawn(process.execPath, ['-e', 'const b = Buffer.alloc(64 * 1024 * 1024, 1); const end = Date.now() + 300; while (Date.now() < end); setInterval(() => b, 1000)'], { stdio: 'ignore' });
  t.after(() => child.kill('SIGKILL'));
  await new Promise((r) => setTimeout(r, 800));
  const tree = await readProcessTreeUsage(process.pid);
  const alone = await readProcessTreeUsage(child.pid as number);
  assert.ok(tree && alone);
  assert.ok(alone.rssBytes > 60 * 1024 * 1024, `the child holds 64 MiB: ${alone.rssBytes}`);
  assert.ok(tree.rssBytes >= alone.rssBytes + 10 * 1024 * 1024, 'the tree holds the child and this process');
  assert.ok(alone.cpuSeconds >= 0.1, `the child spun for 300 ms: ${alone.cpuSeconds}`);
  assert.equal(await readProcessTreeUsage(2 ** 22 + 12345), null);
});

test('CPU seconds are carried across a restart (a new pid) and start again with a new since', () => {
  const c = new CpuCarry();
  assert.equal(c.cpuSince('web', 1, 100, 5), 5);
  assert.equal(c.cpuSince('web', 1, 100, 7), 7);
  assert.equal(c.cpuSince('web', 1, null, null), 7, 'between the exit and the respawn');
  assert.equal(c.cpuSince('web', 1, 101, 1), 8, 'the new process adds to the old one');
  assert.equal(c.cpuSince('web', 2, 102, 1), 1, 'a new activation starts at 0');
});

test("the status's signals: counts, since, CPU and RSS of the pid, and the release's metrics block checked again", async (t) => {
  const paths = await host(t);
  const config = hostConfigSchema.parse({ apps: { web: { runner: 'process' } } });
  await resetSignalCounts(paths, 'web', 1234);
  await countSignal(paths, 'web', 'oomKills', 0);
  const tree = versionDir(paths, 'web', '1.0.0');
  mkdirSync(tree, { recursive: true });
  const release = (metrics: unknown) => writeFileSync(path.join(tree, 'steward-release.json'), JSON.stringify({ name: 'web', version: '1.0.0', start: { command: ['node'] }, metrics }));
  release({ url: 'http://localhost:9100/metrics', requests: 'a_total', errors: 'a_total{code=~"5.."}' });
  const s = await signalsOf({ paths, config, startedAt: 1, app: 'web', current: '1.0.0', pid: 42, restarts: 2, readUsage: async () => ({ cpuSeconds: 3.5, rssBytes: 4096 }), carry: new CpuCarry() });
  assert.deepEqual(s, { since: 1234, restarts: 2, livenessFailures: 0, watchdogKills: 0, oomKills: 1, cpuSeconds: 3.5, rssBytes: 4096, metrics: { url: 'http://localhost:9100/metrics', requests: 'a_total', errors: 'a_total{code=~"5.."}' } });
  // A release file edited under the helper to point off loopback: no metrics block reaches the agent.
  release({ url: 'http://10.1.2.3:9100/metrics', requests: 'a_total', errors: 'b_total' });
  const off = await signalsOf({ paths, config, startedAt: 1, app: 'web', current: '1.0.0', pid: null, restarts: 0, carry: new CpuCarry() });
  assert.equal(off.metrics, undefined);
  assert.deepEqual([off.cpuSeconds, off.rssBytes], [0, 0]);
});
