import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { fetchToFile } from '../../src/platform/http-fetch.js';
import { fetchSettings, useFetchFixture } from '../helpers/fetch-server.js';
import { sri } from '../helpers/host.js';
import { skipUnlessCI } from '../helpers/skip.js';

// How every steward client makes a request (http-request.ts): `localhost` never reaches the
// resolver. Through fetchToFile.

const { tmp, dest, serve } = useFetchFixture(after);
const body = randomBytes(200 * 1024);

describe('fetchToFile to localhost', () => {
  test('http to localhost is served from the loopback address', async () => {
    const s = await serve((_req, res) => res.end(body));
    const port = new URL(s.origin).port;
    const r = await fetchToFile({ url: `http://localhost:${port}/x`, destFile: dest(), maxBytes: body.length, settings: fetchSettings() });
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
        hosts, process.execPath, script, url, dest(), String(body.length), JSON.stringify(fetchSettings()),
      ]));
    } catch {
      skipUnlessCI(t, 'needs root and unshare -m to give the child its own hosts file');
      return;
    }
    const r = JSON.parse(out) as { seen: string; bytes?: number; message?: string };
    assert.equal(r.seen, '127.0.0.2', 'the child must see the replaced hosts file');
    assert.equal(r.bytes, body.length, r.message);
  });
});

describe('the TLS context of a CA list', () => {
  test('is made once per list, not once per connection; another list gets its own', async () => {
    // Node's tls.connect builds a context from a `ca` option at every connection (all 144 of
    // Node's roots parsed again: 29 ms of CPU here). Counted through the one function that does.
    const tls = (await import('node:tls')).default;
    const { startRequest } = await import('../../src/platform/http-request.js');
    const made = { n: 0 };
    const original = tls.createSecureContext;
    tls.createSecureContext = ((...a: Parameters<typeof original>) => {
      made.n++;
      return original(...a);
    }) as typeof original;
    try {
      const one = [...tls.rootCertificates];
      const other = [...tls.rootCertificates];
      // Nothing listens on port 1: each request fails to connect, after its context was chosen.
      const request = (ca: string[]) =>
        new Promise<void>((resolve) => {
          const req = startRequest(new URL('https://127.0.0.1:1/x'), 'GET', {}, ca);
          req.on('error', () => resolve());
          req.end();
        });
      for (let i = 0; i < 3; i++) await request(one);
      assert.equal(made.n, 1, 'three connections with one list: one context');
      await request(other);
      assert.equal(made.n, 2, 'another list: its own context');
    } finally {
      tls.createSecureContext = original;
    }
  });
});
