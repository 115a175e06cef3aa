// `steward-control serve --metrics-listen HOST:PORT` as a real process (docs/design.md §12): its metrics,
// process metrics included, pass `promtool check metrics` and move with a heartbeat; the
// --listen address named again serves them on the fleet listener, by choice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../fixtures/app-releases.js';
import { FakeNode, request } from '../helpers/control-harness.js';
import { REPO } from '../helpers/host.js';
import { assertPromtoolPasses, valueOf } from '../helpers/prom-text.js';

const BIN = path.join(REPO, 'bin', 'steward-control.js');

function cli(db: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, '--db', db, ...args], { env: { ...process.env, DEBUG: '' } }, (err, stdout, stderr) => {
      const code = err ? (err as { code?: unknown }).code : 0;
      resolve({ code: typeof code === 'number' ? code : 1, stdout, stderr });
    });
  });
}

// Starts `serve --json` with `args` and resolves its first line of output (the URLs) and its exit.
async function startServe(db: string, args: string[]) {
  const child = spawn(process.execPath, [BIN, '--db', db, '--json', 'serve', '--init', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const urls = await new Promise<{ listening: string; metrics: string }>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]!));
    });
    void exited.then((code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
  });
  return { child, exited, urls };
}

test('serve --metrics-listen serves metrics that pass promtool, with process metrics, and count a heartbeat', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-serve-metrics-'));
  const db = path.join(dir, 'control.db');
  const { child, exited, urls } = await startServe(db, ['--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0']);
  try {
    assert.match(urls.metrics, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const token = JSON.parse((await cli(db, '--json', 'token', 'create')).stdout).token as string;
    const node = await new FakeNode({ clock: { now: () => Date.now() }, server: { url: urls.listening }, token: () => token }, 'metrics-host').enroll();
    assert.equal((await node.heartbeat()).status, 200);
    const scrape = await request(urls.metrics.replace(/\/metrics$/, ''), '/metrics', 'GET');
    assert.equal(scrape.status, 200);
    const text = scrape.raw.toString('utf8');
    assertPromtoolPasses(t, text);
    assert.equal(valueOf(text, 'steward_control_heartbeats_total', { result: 'ok' }), 1);
    assert.equal(valueOf(text, 'steward_control_nodes', { freshness: 'fresh' }), 1);
    assert.ok((valueOf(text, 'process_resident_memory_bytes') ?? 0) > 0, 'process metrics');
    assert.equal((await request(urls.metrics.replace(/\/metrics$/, ''), '/readyz', 'GET')).status, 200);
  } finally {
    child.kill('SIGTERM');
    assert.equal(await exited, 0, 'SIGTERM closes both listeners cleanly');
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a --metrics-listen naming the --listen address is a choice: that one listener serves /metrics beside the fleet', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-serve-metrics-'));
  const db = path.join(dir, 'control.db');
  const port = await freePort();
  const { child, exited, urls } = await startServe(db, ['--listen', `127.0.0.1:${port}`, '--metrics-listen', `127.0.0.1:${port}`]);
  try {
    assert.equal(urls.listening, `http://127.0.0.1:${port}`);
    assert.equal(urls.metrics, `http://127.0.0.1:${port}/metrics`);
    const token = JSON.parse((await cli(db, '--json', 'token', 'create')).stdout).token as string;
    const node = await new FakeNode({ clock: { now: () => Date.now() }, server: { url: urls.listening }, token: () => token }, 'metrics-host').enroll();
    assert.equal((await node.heartbeat()).status, 200);
    const scrape = await request(urls.listening, '/metrics', 'GET');
    assert.equal(scrape.status, 200);
    assertPromtoolPasses(t, scrape.raw.toString('utf8'));
    assert.equal(valueOf(scrape.raw.toString('utf8'), 'steward_control_heartbeats_total', { result: 'ok' }), 1);
  } finally {
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('serve refuses a --metrics-listen that is no HOST:PORT', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-serve-metrics-'));
  try {
    const r = await cli(path.join(dir, 'control.db'), 'serve', '--init', '--listen', '127.0.0.1:0', '--metrics-listen', 'nowhere');
    assert.equal(r.code, 2, r.stderr);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
