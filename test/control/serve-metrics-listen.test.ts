// `steward-control serve --metrics-listen HOST:PORT` as a real process (DESIGN §12): its metrics,
// process metrics included, pass `promtool check metrics` and move with a heartbeat.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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

test('serve --metrics-listen serves metrics that pass promtool, with process metrics, and count a heartbeat', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-serve-metrics-'));
  const db = path.join(dir, 'control.db');
  const child = spawn(process.execPath, [BIN, '--db', db, '--json', 'serve', '--init', '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    const urls = await new Promise<{ listening: string; metrics: string }>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]!));
      });
      void exited.then((code) => reject(new Error(`serve exited ${code}`)));
    });
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

test('serve refuses a --metrics-listen that is no HOST:PORT', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-serve-metrics-'));
  try {
    const r = await cli(path.join(dir, 'control.db'), 'serve', '--init', '--listen', '127.0.0.1:0', '--metrics-listen', 'nowhere');
    assert.equal(r.code, 2, r.stderr);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
