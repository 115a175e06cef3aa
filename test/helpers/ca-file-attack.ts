import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { stagingDir, versionDir } from '../../src/core/paths.js';
import { StewardError } from '../../src/core/errors.js';
import { stageRelease } from '../../src/helper/stage/stage-release.js';
import { releaseTgz } from '../fixtures/releases.js';
import { makeReleaseKey, manifestFor } from './host.js';
import { skipUnlessCI } from './skip.js';
import { hasOpenssl, selfSignedCert } from './tls-cert.js';
import { hostWithCurrent } from './stage-harness.js';

// One flaw of the CA file the helper trusts for its https fetches (`fetch.caFile`), or of a
// folder above it (issue 15 item 3): whoever can write it may add a CA of their own and serve
// releases from a server that looks like the real one.
export interface CaFlaw {
  // Makes the flaw on `caFile` (0644, written by the test) in `caDir` (0755).
  apply(caFile: string, caDir: string): void;
  // What the refusal must say: the file or folder, and the flaw.
  says(caFile: string, caDir: string): string;
}

// Control first: with the CA file as it should be, the helper fetches web 2.0.0 over https from
// a server only that CA vouches for. Then, with the flaw, staging 2.0.1 is refused with
// CONFIG_INVALID naming it, before any request, and nothing is staged.
export async function assertCaFlawRefused(t: TestContext, flaw: CaFlaw): Promise<void> {
  if (!hasOpenssl()) return skipUnlessCI(t, 'openssl is not installed: cannot make a certificate for the https server');
  const base = mkdtempSync(path.join(os.tmpdir(), 'steward-ca-'));
  chmodSync(base, 0o755);
  const caDir = path.join(base, 'ca');
  mkdirSync(caDir, { mode: 0o755 });
  const caFile = path.join(caDir, 'ca.pem');
  // The key stays outside the CA's folder: only the certificate is what the helper trusts.
  const tls = selfSignedCert(base);
  writeFileSync(caFile, tls.cert);
  chmodSync(caFile, 0o644);
  const tarballs = new Map(['2.0.0', '2.0.1'].map((v) => [`/web-${v}.tgz`, releaseTgz('web', v)]));
  const asked: string[] = [];
  const server = https.createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    asked.push(req.url ?? '');
    const body = tarballs.get(req.url ?? '');
    res.statusCode = body ? 200 : 404;
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const s = await hostWithCurrent({ fetch: { caFile } });
  try {
    const key = makeReleaseKey(s.host, ['web']);
    const manifest = (v: string) => key.sign(manifestFor('web', v, tarballs.get(`/web-${v}.tgz`) as Buffer, { url: `${origin}/web-${v}.tgz` }));
    const ok = await stageRelease(s.deps, { kind: 'admin', app: 'web', version: '2.0.0', manifest: manifest('2.0.0') });
    assert.equal(ok.version, '2.0.0', 'the control: a trusted CA file lets the helper fetch over https');

    flaw.apply(caFile, caDir);
    asked.length = 0;
    await assert.rejects(stageRelease(s.deps, { kind: 'admin', app: 'web', version: '2.0.1', manifest: manifest('2.0.1') }), (err: unknown) => {
      assert.ok(err instanceof StewardError, String(err));
      assert.equal(err.code, 'CONFIG_INVALID', err.message);
      const says = flaw.says(caFile, caDir);
      assert.ok(err.message.includes(says), `the refusal says "${says}": ${err.message}`);
      assert.match(err.message, /must be owned by root/, 'the message states the rule');
      return true;
    });
    assert.deepEqual(asked, [], 'nothing is fetched with a CA file root does not trust');
    assert.equal(existsSync(versionDir(s.host.paths, 'web', '2.0.1')), false, 'web 2.0.1 is not staged');
    assert.deepEqual(readdirSync(stagingDir(s.host.paths, 'web')), [], 'the staging folder is empty');
  } finally {
    server.closeAllConnections();
    server.close();
    s.host.cleanup();
    rmSync(base, { recursive: true, force: true });
  }
}

// Writes a second copy of the CA file beside its folder, for flaws that swap it.
export function copyOutside(caFile: string, caDir: string): string {
  const copy = path.join(path.dirname(caDir), 'elsewhere.pem');
  writeFileSync(copy, readFileSync(caFile), { mode: 0o644 });
  return copy;
}
