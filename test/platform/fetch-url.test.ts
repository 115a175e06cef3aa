import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { fetchToFile } from '../../src/platform/http-fetch.js';
import { assertFailsClean, fetchSettings, useFetchFixture } from '../helpers/fetch-server.js';
import { sri } from '../helpers/host.js';

// Which URLs a release is fetched from and which redirects are followed (fetch-url.ts), through
// fetchToFile.

const { tmp, dest, serve } = useFetchFixture(after);
const body = randomBytes(200 * 1024);

describe('fetchToFile follows redirects on the same origin only', () => {
  test('a redirect to the same origin is followed', async () => {
    const s = await serve((req, res) => {
      if (req.url === '/old') res.writeHead(302, { location: '/new' }).end();
      else res.end(body);
    });
    const destFile = dest();
    const r = await fetchToFile({ url: `${s.origin}/old`, destFile, maxBytes: body.length, settings: fetchSettings() });
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
      fetchToFile({ url: `${s.origin}/web.tgz`, destFile, maxBytes: body.length, settings: fetchSettings() }),
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
      fetchToFile({ url: `${s.origin}/loop`, destFile, maxBytes: 10, settings: fetchSettings({ maxRedirects: 3 }) }),
      'FETCH_FAILED',
      /too many redirects/,
      destFile,
    );
    assert.equal(s.requests.length, 4);
  });
});

describe('fetchToFile refuses unsafe URLs before connecting', () => {
  test('plain http to a non-loopback host is refused before any connection', async () => {
    const destFile = dest();
    const t0 = performance.now();
    await assertFailsClean(
      fetchToFile({ url: 'http://10.255.255.1/x', destFile, maxBytes: 10, settings: fetchSettings() }),
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
    const err = await assertFailsClean(fetchToFile({ url, destFile, maxBytes: body.length, settings: fetchSettings() }), 'FETCH_FAILED', /credentials/, destFile);
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
      await assertFailsClean(fetchToFile({ url, destFile, maxBytes: 3, settings: fetchSettings() }), 'FETCH_FAILED', re, destFile);
    }
  });

  test('a file: URL is refused unless allowFile is set', async () => {
    const src = path.join(tmp, 'local.tgz');
    await fsp.writeFile(src, body);
    const url = pathToFileURL(src).href;
    const destFile = dest();
    await assertFailsClean(fetchToFile({ url, destFile, maxBytes: body.length, settings: fetchSettings() }), 'FETCH_FAILED', /admin\.sock/, destFile);
    const r = await fetchToFile({ url, destFile, maxBytes: body.length, settings: fetchSettings(), allowFile: true });
    assert.equal(r.integrity, sri(body));
    const short = dest();
    await assertFailsClean(
      fetchToFile({ url, destFile: short, maxBytes: body.length + 1, settings: fetchSettings(), allowFile: true }),
      'FETCH_FAILED',
      /shorter than the manifest's size/,
      short,
    );
  });
});
