import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, promises as fsp, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { StewardError } from '../../src/core/errors.js';
import { fetchToFile } from '../../src/platform/http-fetch.js';
import { assertFailsClean, fetchSettings, useFetchFixture } from '../helpers/fetch-server.js';
import { sri } from '../helpers/host.js';
import { skipUnlessCI } from '../helpers/skip.js';

// fetchToFile: the bytes are hashed while they stream, and the manifest's size holds on the
// answer's status, its Content-Length and the bytes received. Redirects and refused URLs are in
// fetch-url.test.ts, deadlines and signals in transfer-guard.test.ts, localhost in
// http-request.test.ts, https in extra-ca.test.ts.

const { dest, serve } = useFetchFixture(after);
const body = randomBytes(200 * 1024);

describe('fetchToFile over loopback http', () => {
  test('a release is downloaded and its integrity is the sha512 of its bytes', async () => {
    const s = await serve((_req, res) => res.end(body));
    const destFile = dest();
    const progress: Array<[number, number]> = [];
    const r = await fetchToFile({
      url: `${s.origin}/web-1.0.0.tgz`,
      destFile,
      maxBytes: body.length,
      settings: fetchSettings(),
      onProgress: (b, t) => progress.push([b, t]),
    });
    assert.deepEqual(r, { bytes: body.length, integrity: sri(body) });
    assert.deepEqual(await fsp.readFile(destFile), body);
    assert.equal((await fsp.stat(destFile)).mode & 0o777, 0o600);
    assert.deepEqual(progress.at(-1), [body.length, body.length]);
    const req = s.requests[0] as http.IncomingMessage;
    assert.equal(req.headers['accept-encoding'], 'identity');
    assert.match(req.headers['user-agent'] ?? '', /^steward-helper\/\d/);
    assert.equal(req.headers.cookie, undefined);
  });

  test('a 404 answer fails the fetch and names the status', async () => {
    const s = await serve((_req, res) => res.writeHead(404).end('no such release'));
    const destFile = dest();
    await assertFailsClean(fetchToFile({ url: `${s.origin}/x`, destFile, maxBytes: 15, settings: fetchSettings() }), 'FETCH_FAILED', /HTTP 404/, destFile);
  });

  test("a server that streams past the manifest's size is cut off at size + 1 bytes", { timeout: 10_000 }, async () => {
    let sent = 0;
    const chunk = Buffer.alloc(16 * 1024, 0x61);
    const s = await serve((_req, res) => {
      // Streams forever (chunked, no Content-Length) until the client goes away.
      const pump = () => {
        while (!res.destroyed && res.write(chunk)) sent += chunk.length;
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
    });
    const destFile = dest();
    await assertFailsClean(
      fetchToFile({ url: `${s.origin}/big`, destFile, maxBytes: 100_000, settings: fetchSettings() }),
      'FETCH_FAILED',
      /larger than the manifest's size/,
      destFile,
    );
    await s.closed[0];
    assert.ok(sent < 50 * 1024 * 1024, `the server sent ${sent} bytes before the client stopped`);
  });

  test("a Content-Length that disagrees with the manifest's size is refused before the body", async () => {
    const s = await serve((_req, res) => res.end(body));
    for (const [maxBytes, re] of [
      [body.length - 1, /larger than the manifest's size \(Content-Length/],
      [body.length + 1, /shorter than the manifest's size \(Content-Length/],
    ] as const) {
      const destFile = dest();
      await assertFailsClean(fetchToFile({ url: `${s.origin}/x`, destFile, maxBytes, settings: fetchSettings() }), 'FETCH_FAILED', re, destFile);
    }
  });

  test("a body shorter than the manifest's size fails the fetch", async () => {
    const s = await serve((_req, res) => {
      res.write(body.subarray(0, 1000)); // chunked, no Content-Length
      res.end();
    });
    const destFile = dest();
    await assertFailsClean(
      fetchToFile({ url: `${s.origin}/x`, destFile, maxBytes: body.length, settings: fetchSettings() }),
      'FETCH_FAILED',
      /shorter than the manifest's size/,
      destFile,
    );
  });

  test('a connection cut in the middle of the body fails the fetch', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': String(body.length) });
      res.write(body.subarray(0, 1000), () => res.socket?.destroy());
    });
    const destFile = dest();
    await assertFailsClean(fetchToFile({ url: `${s.origin}/x`, destFile, maxBytes: body.length, settings: fetchSettings() }), 'FETCH_FAILED', /./, destFile);
  });

  test('an existing destFile is neither overwritten nor removed', async () => {
    const s = await serve((_req, res) => res.end(body));
    const destFile = dest();
    await fsp.writeFile(destFile, 'keep me');
    await assert.rejects(fetchToFile({ url: `${s.origin}/x`, destFile, maxBytes: body.length, settings: fetchSettings() }), StewardError);
    assert.equal(await fsp.readFile(destFile, 'utf8'), 'keep me');
    assert.equal(s.requests.length, 0);
  });
});

describe('fetchToFile on a full disk', () => {
  test('a full disk fails with DISK_FULL and removes the partial file', async (t) => {
    const mnt = mkdtempSync(path.join(os.tmpdir(), 'steward-full-'));
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', mnt], { stdio: 'ignore' });
    } catch {
      rmSync(mnt, { recursive: true, force: true });
      skipUnlessCI(t, 'mounting a small tmpfs needs root');
      return;
    }
    try {
      const s = await serve((_req, res) => res.end(body));
      const destFile = path.join(mnt, 'web.tgz');
      await assertFailsClean(fetchToFile({ url: `${s.origin}/x`, destFile, maxBytes: body.length, settings: fetchSettings() }), 'DISK_FULL', /no space/, destFile);
    } finally {
      execFileSync('umount', [mnt]);
      rmSync(mnt, { recursive: true, force: true });
    }
  });
});
