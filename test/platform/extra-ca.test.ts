import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { readExtraCa } from '../../src/platform/extra-ca.js';
import { fetchToFile } from '../../src/platform/http-fetch.js';
import { assertFailsClean, fetchSettings, useFetchFixture } from '../helpers/fetch-server.js';
import { sri } from '../helpers/host.js';
import { selfSignedCert } from '../helpers/tls-cert.js';

// https verified against Node's CAs plus the extra CA file (extra-ca.ts), through fetchToFile.

const { dest, serve } = useFetchFixture(after);
const body = randomBytes(200 * 1024);

describe('fetchToFile over https', () => {
  let tlsFiles: { key: Buffer; cert: Buffer };
  let caFile: string;
  let tlsDir: string;
  after(() => rmSync(tlsDir, { recursive: true, force: true }));
  before(() => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-tls-'));
    tlsDir = dir;
    const made = selfSignedCert(dir);
    caFile = made.certFile;
    tlsFiles = { key: made.key, cert: made.cert };
  });

  test('https with the extra CA downloads the release', async () => {
    const s = await serve((_req, res) => res.end(body), tlsFiles);
    const r = await fetchToFile({ url: `${s.origin}/x`, destFile: dest(), maxBytes: body.length, settings: fetchSettings(), caFile });
    assert.equal(r.integrity, sri(body));
  });

  test('https to a server whose certificate is not trusted fails', async () => {
    const s = await serve((_req, res) => res.end(body), tlsFiles);
    const destFile = dest();
    await assertFailsClean(
      fetchToFile({ url: `${s.origin}/x`, destFile, maxBytes: body.length, settings: fetchSettings() }),
      'FETCH_FAILED',
      /certificate/i,
      destFile,
    );
    assert.equal(s.requests.length, 0);
  });
});

test('the same CA file read again gives the same list (one TLS context), and a changed one a new list with its new bytes', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-extra-ca-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'ca.pem');
  writeFileSync(file, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
  const a = await readExtraCa(file);
  const b = await readExtraCa(file);
  assert.ok(a && a === b, 'an unchanged file: the very same list');
  writeFileSync(file, '-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n');
  const c = await readExtraCa(file);
  assert.ok(c && c !== a);
  assert.match(c[c.length - 1] as string, /BBBB/);
  assert.equal(c.length, a.length);
});
