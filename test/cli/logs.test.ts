import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { appLogFile } from '../../src/core/paths.js';
import { agentctl, BIN, makeHost, processApp } from '../helpers/host.js';
import { waitFor } from '../helpers/systemd-container.js';

// `agentctl logs <app>` without systemd here: a process app's output is its log file, which the
// CLI reads itself (no helper needs to run). Under systemd it is the unit's journal
// (test/security/daemonized-children-of-a-crashing-app.test.ts reads one there).

function hostWithLog(lines: string[]) {
  const host = makeHost({ apps: { web: processApp(), other: processApp() } });
  const file = appLogFile(host.paths, 'web');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, lines.map((l) => l + '\n').join(''), { mode: 0o640 });
  return { host, file };
}

test('agentctl logs prints the last lines of the log file, -n of them, and --json gives them as an array', async (t) => {
  const { host, file } = hostWithLog(['one', 'two', 'three', 'four']);
  t.after(() => host.cleanup());
  const two = await agentctl(host, ['logs', 'web', '-n', '2']);
  assert.equal(two.code, 0, two.stderr);
  assert.equal(two.stdout, 'three\nfour\n');
  const all = await agentctl(host, ['logs', 'web']);
  assert.equal(all.stdout, 'one\ntwo\nthree\nfour\n', 'the default shows up to 100 lines');
  const json = await agentctl(host, ['logs', 'web', '-n', '3', '--json']);
  assert.equal(json.code, 0, json.stderr);
  assert.deepEqual(json.json, { app: 'web', source: 'file', file, lines: ['two', 'three', 'four'] });
});

test('agentctl logs names an unknown app, a missing log and a bad -n, with their exit codes', async (t) => {
  const { host } = hostWithLog(['x']);
  t.after(() => host.cleanup());
  const unknown = await agentctl(host, ['logs', 'nosuch']);
  assert.equal(unknown.code, 3);
  assert.match(unknown.stderr, /UNKNOWN_APP: app nosuch is not in the host config/);
  const unknownJson = await agentctl(host, ['logs', 'nosuch', '--json']);
  assert.equal(unknownJson.json?.error?.code, 'UNKNOWN_APP');
  const missing = await agentctl(host, ['logs', 'other']);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /NOT_FOUND: .*other\.log does not exist/);
  assert.equal((await agentctl(host, ['logs', 'web', '-n', 'many'])).code, 2);
  assert.equal((await agentctl(host, ['logs', 'web', '-f', '--json'])).code, 2, '--json does not go with --follow');
});

test('agentctl logs -f prints the last lines, then what is appended, and goes on after the log is cut', { timeout: 30_000 }, async (t) => {
  const { host, file } = hostWithLog(['old', 'last']);
  const child = spawn(process.execPath, [BIN.agentctl, '--root', host.root, 'logs', 'web', '-f', '-n', '1'], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => {
    child.kill('SIGKILL');
    host.cleanup();
  });
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += c));
  const lines = readline.createInterface({ input: child.stdout });
  const seen: string[] = [];
  const waiters: Array<() => void> = [];
  lines.on('line', (l) => {
    seen.push(l);
    for (const w of waiters.splice(0)) w();
  });
  const until = async (n: number) => {
    while (seen.length < n) await new Promise<void>((r) => waiters.push(r));
  };
  await until(1);
  assert.deepEqual(seen, ['last']);
  appendFileSync(file, 'new one\n');
  await until(2);
  assert.deepEqual(seen, ['last', 'new one']);
  // The helper's cap: the file is cut to its newest part, and the app writes on.
  writeFileSync(file, 'kept\n');
  await waitFor('the follow to see the cut', async () => /was cut to its newest part/.test(stderr), 10_000, 20);
  appendFileSync(file, 'after the cut\n');
  await until(3);
  assert.deepEqual(seen, ['last', 'new one', 'after the cut']);
});
