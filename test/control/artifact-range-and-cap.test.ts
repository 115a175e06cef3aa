import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { byteRange } from '../../src/control/server/artifacts.js';
import { controlCli, startControlDaemon } from '../helpers/fleet.js';
import { sri } from '../helpers/host.js';

// docs/design.md §13: artifacts answer Range requests and carry immutable cache headers, and one instance
// sends at most --max-downloads bodies at once (503 with Retry-After past it).

function get(url: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function withArtifact(args: string[], size: number, run: (url: string, bytes: Buffer, integrity: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-artifact-range-'));
  const db = path.join(dir, 'control.db');
  const control = await startControlDaemon(db, 0, 1, { args });
  try {
    const keys = await controlCli(db, ['keys', 'create', '--out', path.join(dir, 'keys'), '--json']);
    assert.equal(keys.code, 0, keys.stderr);
    const bytes = randomBytes(size);
    writeFileSync(path.join(dir, 'web.tgz'), bytes);
    const add = await controlCli(db, ['release', 'add', 'web', '1.0.0', '--file', path.join(dir, 'web.tgz'), '--base-url', control.url, '--key', keys.json.privateKeyFile]);
    assert.equal(add.code, 0, add.stderr);
    await run(`${control.url}/v1/artifacts/web/1.0.0.tgz`, bytes, sri(bytes));
  } finally {
    await control.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

test('an artifact answers one byte range with 206, ignores what it may ignore, and refuses a range past its end with 416', async () => {
  await withArtifact([], 10_000, async (url, bytes, integrity) => {
    const whole = await get(url);
    assert.equal(whole.status, 200);
    assert.deepEqual(whole.body, bytes);
    assert.equal(whole.headers['accept-ranges'], 'bytes');
    assert.equal(whole.headers.etag, `"${integrity}"`);
    assert.equal(whole.headers['cache-control'], 'public, max-age=31536000, immutable');
    const cases: Array<[string, number, number]> = [['bytes=0-99', 0, 99], ['bytes=9000-', 9000, 9999], ['bytes=-500', 9500, 9999], ['bytes=9990-20000', 9990, 9999]];
    for (const [range, start, end] of cases) {
      const r = await get(url, { range });
      assert.equal(r.status, 206, range);
      assert.equal(r.headers['content-range'], `bytes ${start}-${end}/10000`, range);
      assert.equal(r.headers['content-length'], String(end - start + 1), range);
      assert.deepEqual(r.body, bytes.subarray(start, end + 1), range);
    }
    // Several ranges, another unit, garbage: the whole body (a server may ignore Range).
    for (const range of ['bytes=0-1,5-6', 'items=0-1', 'bytes=abc', 'bytes=50-10']) {
      const r = await get(url, { range });
      assert.equal(r.status, 200, range);
      assert.equal(r.body.length, 10_000, range);
    }
    const past = await get(url, { range: 'bytes=10000-' });
    assert.equal(past.status, 416);
    assert.equal(past.headers['content-range'], 'bytes */10000');
    assert.equal((JSON.parse(past.body.toString()) as { error: { code: string } }).error.code, 'BAD_RANGE');
    // If-Range: the range only while the client's copy is this one.
    assert.equal((await get(url, { range: 'bytes=0-9', 'if-range': `"${integrity}"` })).status, 206);
    const stale = await get(url, { range: 'bytes=0-9', 'if-range': '"sha512-other"' });
    assert.equal(stale.status, 200);
    assert.equal(stale.body.length, 10_000);
    const head = await get(url, { range: 'bytes=0-9' }, 'HEAD');
    assert.equal(head.status, 206);
    assert.equal(head.headers['content-length'], '10');
    assert.equal(head.body.length, 0);
  });
});

test('past --max-downloads an artifact is answered 503 BUSY with Retry-After, and a slot comes back when a download ends or is dropped', async () => {
  await withArtifact(['--max-downloads', '1'], 32 * 1024 * 1024, async (url, bytes) => {
    // A download that holds its slot: its first chunk read, then paused.
    let hold!: http.ClientRequest;
    const holding = await new Promise<http.IncomingMessage>((resolve, reject) => {
      hold = http.get(url, (res) => res.once('data', () => (res.pause(), resolve(res))));
      hold.on('error', reject);
    });
    assert.equal(holding.statusCode, 200);
    const busy = await get(url);
    assert.equal(busy.status, 503);
    assert.equal(busy.headers['retry-after'], '5');
    assert.equal((JSON.parse(busy.body.toString()) as { error: { code: string } }).error.code, 'BUSY');
    // Dropped mid-body: the slot is free again (the server sees the hang-up a moment later).
    hold.destroy();
    let next = await get(url, { range: 'bytes=0-0' });
    for (let i = 0; next.status === 503 && i < 100; i++) {
      await new Promise((r) => setTimeout(r, 20));
      next = await get(url, { range: 'bytes=0-0' });
    }
    assert.equal(next.status, 206);
    // One after another, each download ends and gives its slot back.
    for (let i = 0; i < 3; i++) assert.deepEqual((await get(url, { range: 'bytes=-4' })).body, bytes.subarray(-4));
  });
});

test('--max-downloads takes a whole number from 1', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-artifact-range-'));
  try {
    for (const bad of ['0', '-1', 'many']) {
      const r = await controlCli(path.join(dir, 'c.db'), ['serve', '--init', '--listen', '127.0.0.1:0', '--max-downloads', bad]);
      assert.equal(r.code, 2, `${bad}: ${r.stderr}`);
      assert.match(r.stderr, /--max-downloads/);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('byteRange reads one range within the size, and says when to ignore or refuse', () => {
  assert.deepEqual(byteRange('bytes=0-0', 1), { start: 0, end: 0 });
  assert.deepEqual(byteRange(' bytes=5-', 10), { start: 5, end: 9 });
  assert.deepEqual(byteRange('bytes=-20', 10), { start: 0, end: 9 });
  assert.equal(byteRange('bytes=-0', 10), 'unsatisfiable');
  assert.equal(byteRange('bytes=0-', 0), 'unsatisfiable');
  assert.equal(byteRange('bytes=-', 10), 'whole');
  assert.equal(byteRange('bytes=1234567890123456-', 10), 'whole');
  assert.equal(byteRange(undefined, 10), 'whole');
});
