import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, promises as fsp, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import type { FetchSettings } from '../../src/core/config-schema.js';
import { StewardError } from '../../src/core/errors.js';
import { fetchToFile, streamToFile } from '../../src/platform/http-fetch.js';
import { skipUnlessCI } from '../helpers/skip.js';

interface TestServer {
  origin: string;
  requests: http.IncomingMessage[];
  closed: Promise<void>[];
  close(): Promise<void>;
}

async function startServer(handler: http.RequestListener, tlsFiles?: { key: Buffer; cert: Buffer }): Promise<TestServer> {
  const requests: http.IncomingMessage[] = [];
  const closed: Promise<void>[] = [];
  const listener: http.RequestListener = (req, res) => {
    requests.push(req);
    closed.push(new Promise((resolve) => res.once('close', () => resolve())));
    handler(req, res);
  };
  const server = tlsFiles ? https.createServer(tlsFiles, listener) : http.createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `${tlsFiles ? 'https' : 'http'}://127.0.0.1:${port}`,
    requests,
    closed,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function settings(over: Partial<FetchSettings> = {}): FetchSettings {
  return {
    deadlineMs: 10_000,
    minBytesPerSecond: 0,
    minSpeedWindowMs: 30_000,
    maxRedirects: 5,
    diskReserveBytes: 0,
    maxUnsignedBytes: 1 << 30,
    ...over,
  };
}

function sri(bytes: Buffer): string {
  return `sha512-${createHash('sha512').update(bytes).digest('base64')}`;
}

let tmp: string;
let n = 0;
const dest = () => path.join(tmp, `download-${n++}.tgz`);

// Asserts a StewardError with `code` and a message matching `re`, and that destFile is gone.
async function assertFailsClean(p: Promise<unknown>, code: string, re: RegExp, destFile: string): Promise<StewardError> {
  const err = await p.then(
    () => assert.fail('expected the fetch to fail'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof StewardError, `not a StewardError: ${String(err)}`);
  assert.equal(err.code, code, err.message);
  assert.match(err.message, re);
  assert.equal(existsSync(destFile), false, 'destFile must be removed on failure');
  return err;
}

const body = randomBytes(200 * 1024);
let servers: TestServer[] = [];
async function serve(handler: http.RequestListener, tlsFiles?: { key: Buffer; cert: Buffer }): Promise<TestServer> {
  const s = await startServer(handler, tlsFiles);
  servers.push(s);
  return s;
}

before(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'steward-fetch-'));
});
after(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
  rmSync(tmp, { recursive: true, force: true });
});

describe('fetchToFile over loopback http', () => {
  test('a release is downloaded and its integrity is the sha512 of its bytes', async () => {
    const s = await serve((_req, res) => res.end(body));
    const destFile = dest();
    const progress: Array<[number, number]> = [];
    const r = await fetchToFile({
      url: `${s.origin}/web-1.0.0.tgz`,
      destFile,
      maxBytes: body.length,
      settings: settings(),
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

  test('a redirect to the same origin is followed', async () => {
    const s = await serve((req, res) => {
      if (req.url === '/old') res.writeHead(302, { location: '/new' }).end();
      else res.end(body);
    });
    const destFile = dest();
    const r = await fetchToFile({ url: `${s.origin}/old`, destFile, maxBytes: body.length, settings: settings() });
    assert.equal(r.integrity, sri(body));
    assert.deepEqual(
      s.requests.map((q) => q.url),
      ['/old', '/new'],
    );
  });

  test('a redirect to another origin is refused and nothing is fetched from it', async () => {
    const other = await serve((_req, res) => res.end(body));
    const s = await serve((_req, res) => res.writeHead(307, { location: `${other.origin}/web.tgz` }).end());
    const destFile = dest();
    const err = await assertFailsClean(
      fetchToFile({ url: `${s.origin}/web.tgz`, destFile, maxBytes: body.length, settings: settings() }),
      'FETCH_FAILED',
      /same origin/,
      destFile,
    );
    assert.ok(err.message.includes(s.origin) && err.message.includes(other.origin), err.message);
    assert.equal(other.requests.length, 0);
  });

  test('a redirect loop stops after maxRedirects hops', async () => {
    const s = await serve((_req, res) => res.writeHead(301, { location: '/loop' }).end());
    const destFile = dest();
    await assertFailsClean(
      fetchToFile({ url: `${s.origin}/loop`, destFile, maxBytes: 10, settings: settings({ maxRedirects: 3 }) }),
      'FETCH_FAILED',
      /too many redirects/,
      destFile,
    );
    assert.equal(s.requests.length, 4);
  });

  test('a 404 answer fails the fetch and names the status', async () => {
    const s = await serve((_req, res) => res.writeHead(404).end('no such release'));
    const destFile = dest();
    await assertFailsClean(fetchToFile({ url: `${s.origin}/x`, destFile, maxBytes: 15, settings: settings() }), 'FETCH_FAILED', /HTTP 404/, destFile);
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
      fetchToFile({ url: `${s.origin}/big`, destFile, maxBytes: 100_000, settings: settings() }),
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
      await assertFailsClean(fetchToFile({ url: `${s.origin}/x`, destFile, maxBytes, settings: settings() }), 'FETCH_FAILED', re, destFile);
    }
  });

  test("a body shorter than the manifest's size fails the fetch", async () => {
    const s = await serve((_req, res) => {
      res.write(body.subarray(0, 1000)); // chunked, no Content-Length
      res.end();
    });
    const destFile = dest();
    await assertFailsClean(
      fetchToFile({ url: `${s.origin}/x`, destFile, maxBytes: body.length, settings: settings() }),
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
    await assertFailsClean(fetchToFile({ url: `${s.origin}/x`, destFile, maxBytes: body.length, settings: settings() }), 'FETCH_FAILED', /./, destFile);
  });

  test('a server that stalls fails at the total deadline', { timeout: 10_000 }, async () => {
    const s = await serve((_req, res) => res.writeHead(200).write('abc'));
    const destFile = dest();
    const t0 = performance.now();
    await assertFailsClean(
      fetchToFile({ url: `${s.origin}/x`, destFile, maxBytes: 1000, settings: settings({ deadlineMs: 300 }) }),
      'FETCH_FAILED',
      /deadline/,
      destFile,
    );
    const ms = performance.now() - t0;
    assert.ok(ms >= 290 && ms < 3000, `took ${ms} ms`);
  });

  test('a server that drips bytes below the minimum speed fails as too slow', { timeout: 10_000 }, async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200);
      const t = setInterval(() => res.write(Buffer.alloc(10, 0x62)), 50);
      res.once('close', () => clearInterval(t));
    });
    const destFile = dest();
    const t0 = performance.now();
    await assertFailsClean(
      fetchToFile({
        url: `${s.origin}/x`,
        destFile,
        maxBytes: 100_000,
        settings: settings({ minSpeedWindowMs: 300, minBytesPerSecond: 10_000 }),
      }),
      'FETCH_FAILED',
      /too slow/,
      destFile,
    );
    assert.ok(performance.now() - t0 < 3000);
  });

  test('http to localhost is served from the loopback address', async () => {
    const s = await serve((_req, res) => res.end(body));
    const port = new URL(s.origin).port;
    const r = await fetchToFile({ url: `http://localhost:${port}/x`, destFile: dest(), maxBytes: body.length, settings: settings() });
    assert.equal(r.integrity, sri(body));
    assert.equal(s.requests.length, 1);
  });

  test('localhost is pinned to 127.0.0.1 even where the hosts file says otherwise', { timeout: 10_000 }, async (t) => {
    // A child in its own mount namespace sees a hosts file mapping localhost to 127.0.0.2,
    // where nothing listens: only a fetch that never asks the resolver reaches the server.
    const s = await serve((_req, res) => res.end(body));
    const hosts = path.join(tmp, 'hosts');
    await fsp.writeFile(hosts, '127.0.0.2 localhost\n');
    const moduleUrl = new URL('../../src/platform/http-fetch.js', import.meta.url).href;
    const script = `
      import dns from 'node:dns/promises';
      const { fetchToFile } = await import(${JSON.stringify(moduleUrl)});
      const seen = (await dns.lookup('localhost')).address;
      const [url, destFile, maxBytes, settings] = process.argv.slice(1);
      try {
        const r = await fetchToFile({ url, destFile, maxBytes: Number(maxBytes), settings: JSON.parse(settings) });
        console.log(JSON.stringify({ seen, bytes: r.bytes }));
      } catch (e) {
        console.log(JSON.stringify({ seen, code: e.code, message: e.message }));
      }`;
    const url = `http://localhost:${new URL(s.origin).port}/x`;
    let out: string;
    try {
      ({ stdout: out } = await promisify(execFile)('unshare', [
        '-m', 'sh', '-c', 'mount --bind "$0" /etc/hosts && exec "$1" --input-type=module -e "$2" "$3" "$4" "$5" "$6"',
        hosts, process.execPath, script, url, dest(), String(body.length), JSON.stringify(settings()),
      ]));
    } catch {
      skipUnlessCI(t, 'needs root and unshare -m to give the child its own hosts file');
      return;
    }
    const r = JSON.parse(out) as { seen: string; bytes?: number; message?: string };
    assert.equal(r.seen, '127.0.0.2', 'the child must see the replaced hosts file');
    assert.equal(r.bytes, body.length, r.message);
  });

  test('an existing destFile is neither overwritten nor removed', async () => {
    const s = await serve((_req, res) => res.end(body));
    const destFile = dest();
    await fsp.writeFile(destFile, 'keep me');
    await assert.rejects(fetchToFile({ url: `${s.origin}/x`, destFile, maxBytes: body.length, settings: settings() }), StewardError);
    assert.equal(await fsp.readFile(destFile, 'utf8'), 'keep me');
    assert.equal(s.requests.length, 0);
  });

  test('an aborted signal stops a fetch in progress', { timeout: 10_000 }, async () => {
    const s = await serve((_req, res) => res.writeHead(200).write('abc'));
    const destFile = dest();
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    await assertFailsClean(
      fetchToFile({ url: `${s.origin}/x`, destFile, maxBytes: 1000, settings: settings(), signal: ac.signal }),
      'FETCH_FAILED',
      /aborted/,
      destFile,
    );
    await s.closed[0];
  });

  test('a signal aborted before the start sends nothing', async () => {
    const s = await serve((_req, res) => res.end(body));
    const destFile = dest();
    await assertFailsClean(
      fetchToFile({ url: `${s.origin}/x`, destFile, maxBytes: body.length, settings: settings(), signal: AbortSignal.abort() }),
      'FETCH_FAILED',
      /aborted/,
      destFile,
    );
    assert.equal(s.requests.length, 0);
  });
});

describe('fetchToFile refuses unsafe URLs before connecting', () => {
  test('plain http to a non-loopback host is refused before any connection', async () => {
    const destFile = dest();
    const t0 = performance.now();
    await assertFailsClean(
      fetchToFile({ url: 'http://10.255.255.1/x', destFile, maxBytes: 10, settings: settings() }),
      'FETCH_FAILED',
      /loopback/,
      destFile,
    );
    assert.ok(performance.now() - t0 < 100);
  });

  test('credentials in the URL are refused before any connection', async () => {
    const s = await serve((_req, res) => res.end(body));
    const destFile = dest();
    const url = s.origin.replace('://', '://user:secret@') + '/x';
    const err = await assertFailsClean(fetchToFile({ url, destFile, maxBytes: body.length, settings: settings() }), 'FETCH_FAILED', /credentials/, destFile);
    assert.ok(!err.message.includes('secret'));
    assert.equal(s.requests.length, 0);
  });

  test('schemes other than https and loopback http are refused', async () => {
    const cases: Array<[string, RegExp]> = [
      ['ftp://127.0.0.1/x', /scheme ftp: is not allowed/],
      ['data:application/gzip;base64,AAAA', /scheme data: is not allowed/],
      ['gopher://127.0.0.1/x', /scheme gopher: is not allowed/],
      ['not a url', /not a valid URL/],
    ];
    for (const [url, re] of cases) {
      const destFile = dest();
      await assertFailsClean(fetchToFile({ url, destFile, maxBytes: 3, settings: settings() }), 'FETCH_FAILED', re, destFile);
    }
  });

  test('a file: URL is refused unless allowFile is set', async () => {
    const src = path.join(tmp, 'local.tgz');
    await fsp.writeFile(src, body);
    const url = pathToFileURL(src).href;
    const destFile = dest();
    await assertFailsClean(fetchToFile({ url, destFile, maxBytes: body.length, settings: settings() }), 'FETCH_FAILED', /admin\.sock/, destFile);
    const r = await fetchToFile({ url, destFile, maxBytes: body.length, settings: settings(), allowFile: true });
    assert.equal(r.integrity, sri(body));
    const short = dest();
    await assertFailsClean(
      fetchToFile({ url, destFile: short, maxBytes: body.length + 1, settings: settings(), allowFile: true }),
      'FETCH_FAILED',
      /shorter than the manifest's size/,
      short,
    );
  });
});

describe('fetchToFile over https', () => {
  let tlsFiles: { key: Buffer; cert: Buffer };
  let caFile: string;
  let tlsDir: string;
  after(() => rmSync(tlsDir, { recursive: true, force: true }));
  before(() => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-tls-'));
    tlsDir = dir;
    const key = path.join(dir, 'key.pem');
    caFile = path.join(dir, 'cert.pem');
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', key, '-out', caFile, '-days', '1', '-subj', '/CN=127.0.0.1',
      '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ], { stdio: 'ignore' });
    tlsFiles = { key: readFileSync(key), cert: readFileSync(caFile) };
  });

  test('https with the extra CA downloads the release', async () => {
    const s = await serve((_req, res) => res.end(body), tlsFiles);
    const r = await fetchToFile({ url: `${s.origin}/x`, destFile: dest(), maxBytes: body.length, settings: settings(), caFile });
    assert.equal(r.integrity, sri(body));
  });

  test('https to a server whose certificate is not trusted fails', async () => {
    const s = await serve((_req, res) => res.end(body), tlsFiles);
    const destFile = dest();
    await assertFailsClean(
      fetchToFile({ url: `${s.origin}/x`, destFile, maxBytes: body.length, settings: settings() }),
      'FETCH_FAILED',
      /certificate/i,
      destFile,
    );
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
      await assertFailsClean(fetchToFile({ url: `${s.origin}/x`, destFile, maxBytes: body.length, settings: settings() }), 'DISK_FULL', /no space/, destFile);
    } finally {
      execFileSync('umount', [mnt]);
      rmSync(mnt, { recursive: true, force: true });
    }
  });
});

describe('streamToFile', () => {
  test('an upload of exactly the announced size is stored with its integrity', async () => {
    const destFile = dest();
    const r = await streamToFile({ stream: Readable.from([body.subarray(0, 5000), body.subarray(5000)]), destFile, expectedBytes: body.length });
    assert.deepEqual(r, { bytes: body.length, integrity: sri(body) });
    assert.deepEqual(await fsp.readFile(destFile), body);
  });

  test('an upload shorter than announced fails and leaves no file', async () => {
    const destFile = dest();
    await assertFailsClean(streamToFile({ stream: Readable.from([body.subarray(0, 10)]), destFile, expectedBytes: 11 }), 'FETCH_FAILED', /shorter/, destFile);
  });

  test('an upload larger than announced fails and leaves no file', async () => {
    const destFile = dest();
    await assertFailsClean(streamToFile({ stream: Readable.from([body.subarray(0, 12)]), destFile, expectedBytes: 11 }), 'FETCH_FAILED', /larger/, destFile);
  });

  test('an aborted upload stops and leaves no file', async () => {
    const destFile = dest();
    const stream = new Readable({ read() {} });
    stream.push(body.subarray(0, 10));
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    await assertFailsClean(streamToFile({ stream, destFile, expectedBytes: 100, signal: ac.signal }), 'FETCH_FAILED', /aborted/, destFile);
  });
});
