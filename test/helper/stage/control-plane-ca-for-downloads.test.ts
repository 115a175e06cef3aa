// One CA setting for the control plane (issue 31 item 4): a release the helper downloads from the
// control plane's origin is verified against controlPlane.caFile, as the agent's enrollment and
// heartbeats are, with no fetch.caFile; any other origin is not (fetch.caFile is its setting);
// and a certificate that does not verify is a FETCH_FAILED that names the URL and the setting to
// use, not only OpenSSL's words. Real https servers on loopback, certificates from a private CA.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { versionDir } from '../../../src/core/paths.js';
import { StewardError } from '../../../src/core/errors.js';
import { stageRelease } from '../../../src/helper/stage/stage-release.js';
import { releaseTgz } from '../../fixtures/releases.js';
import { makeReleaseKey, manifestFor } from '../../helpers/host.js';
import { skipUnlessCI } from '../../helpers/skip.js';
import { hostWithCurrent } from '../../helpers/stage-harness.js';
import { hasOpenssl, privateCa } from '../../helpers/tls-cert.js';

interface Setup {
  caFile: string;
  otherCaFile: string;
  // The control plane, and another server whose certificate the same private CA signed.
  controlPlane: string;
  elsewhere: string;
}

const tarballs = new Map(['2.0.0', '2.0.1'].map((v) => [`/v1/artifacts/web/${v}.tgz`, releaseTgz('web', v)]));

async function setUp(t: TestContext): Promise<Setup | null> {
  if (!hasOpenssl()) {
    skipUnlessCI(t, 'openssl is not installed: cannot make a private CA for the https servers');
    return null;
  }
  const base = mkdtempSync(path.join(os.tmpdir(), 'steward-cp-ca-'));
  chmodSync(base, 0o755);
  const dir = path.join(base, 'ca');
  mkdirSync(dir, { mode: 0o755 });
  const fleet = privateCa(dir, 'fleet');
  const other = privateCa(dir, 'other');
  for (const f of [fleet.caFile, other.caFile]) chmodSync(f, 0o644);
  const serve = async (): Promise<string> => {
    const server = https.createServer({ key: fleet.key, cert: fleet.cert }, (req, res) => {
      const body = tarballs.get(req.url ?? '');
      res.statusCode = body ? 200 : 404;
      res.end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => {
      server.closeAllConnections();
      server.close();
    });
    return `https://localhost:${(server.address() as AddressInfo).port}`;
  };
  const controlPlane = await serve();
  const elsewhere = await serve();
  t.after(() => rmSync(base, { recursive: true, force: true }));
  return { caFile: fleet.caFile, otherCaFile: other.caFile, controlPlane, elsewhere };
}

async function stage(t: TestContext, config: Record<string, unknown>, version: string, url: string): Promise<StewardError | null> {
  const s = await hostWithCurrent(config);
  t.after(() => s.host.cleanup());
  const key = makeReleaseKey(s.host, ['web']);
  const bytes = tarballs.get(`/v1/artifacts/web/${version}.tgz`) as Buffer;
  const manifest = key.sign(manifestFor('web', version, bytes, { url }));
  try {
    const r = await stageRelease(s.deps, { kind: 'helper', app: 'web', version, manifest });
    assert.equal(r.version, version);
    assert.ok(existsSync(versionDir(s.host.paths, 'web', version)));
    return null;
  } catch (err) {
    assert.ok(err instanceof StewardError, String(err));
    assert.equal(existsSync(versionDir(s.host.paths, 'web', version)), false, 'nothing is staged');
    return err;
  }
}

test("a release on the control plane's origin downloads with controlPlane.caFile alone, as heartbeats do", async (t) => {
  const s = await setUp(t);
  if (!s) return;
  const err = await stage(t, { controlPlane: { url: `${s.controlPlane}/`, caFile: s.caFile } }, '2.0.0', `${s.controlPlane}/v1/artifacts/web/2.0.0.tgz`);
  assert.equal(err, null, err?.message);
  // A list of control planes: any of their origins.
  const listed = await stage(t, { controlPlane: { url: ['https://cp-a.invalid/', `${s.controlPlane}/steward/`], caFile: s.caFile } }, '2.0.1', `${s.controlPlane}/v1/artifacts/web/2.0.1.tgz`);
  assert.equal(listed, null, listed?.message);
});

test('controlPlane.caFile and fetch.caFile add up for a control plane URL', async (t) => {
  const s = await setUp(t);
  if (!s) return;
  // The fleet's CA named in fetch.caFile (the old workaround), another CA in controlPlane.caFile.
  const err = await stage(t, { controlPlane: { url: s.controlPlane, caFile: s.otherCaFile }, fetch: { caFile: s.caFile } }, '2.0.0', `${s.controlPlane}/v1/artifacts/web/2.0.0.tgz`);
  assert.equal(err, null, err?.message);
});

test("another origin is not trusted through controlPlane.caFile, and the refusal names its URL and fetch.caFile", async (t) => {
  const s = await setUp(t);
  if (!s) return;
  const url = `${s.elsewhere}/v1/artifacts/web/2.0.0.tgz`;
  const err = await stage(t, { controlPlane: { url: s.controlPlane, caFile: s.caFile } }, '2.0.0', url);
  assert.equal(err?.code, 'FETCH_FAILED', err?.message);
  assert.ok(err?.message.includes(url), err?.message);
  assert.match(err?.message ?? '', /cannot verify the TLS certificate of .*UNABLE_TO_VERIFY_LEAF_SIGNATURE.*name the CA that signed its certificate in fetch\.caFile/);
  // With fetch.caFile it is fetched.
  const ok = await stage(t, { controlPlane: { url: s.controlPlane, caFile: s.caFile }, fetch: { caFile: s.caFile } }, '2.0.1', `${s.elsewhere}/v1/artifacts/web/2.0.1.tgz`);
  assert.equal(ok, null, ok?.message);
});

test('a control plane whose CA no setting names: the refusal names the URL and controlPlane.caFile', async (t) => {
  const s = await setUp(t);
  if (!s) return;
  const url = `${s.controlPlane}/v1/artifacts/web/2.0.0.tgz`;
  const none = await stage(t, { controlPlane: { url: s.controlPlane } }, '2.0.0', url);
  assert.equal(none?.code, 'FETCH_FAILED', none?.message);
  assert.ok(none?.message.includes(url), none?.message);
  assert.match(none?.message ?? '', /is the control plane.*name the CA that signed its certificate in controlPlane\.caFile/);
  // A controlPlane.caFile that holds another CA: the message says which files were tried.
  const wrong = await stage(t, { controlPlane: { url: s.controlPlane, caFile: s.otherCaFile } }, '2.0.0', url);
  assert.equal(wrong?.code, 'FETCH_FAILED', wrong?.message);
  assert.ok(wrong?.message.includes(`controlPlane.caFile ${s.otherCaFile}`), wrong?.message);
  assert.match(wrong?.message ?? '', /put that CA in controlPlane\.caFile/);
});
