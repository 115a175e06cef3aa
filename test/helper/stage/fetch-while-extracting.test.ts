// docs/design.md §3 step 4 as amended: for an http(s) fetch the helper makes itself under a signed
// manifest, the extraction runs while the bytes arrive and are hashed. What must hold: it really
// overlaps (the tree grows before the last byte is sent); the tree is the one a local file of
// the same bytes gives; nothing leaves the 0700 staging folder before the integrity matched; a
// mismatch removes the folder and reports INTEGRITY_MISMATCH, which wins over whatever the
// extractor met on those bytes; a fetch that fails ends the extraction and is the stage's error.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, promises as fsp, readdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { currentLink, stagingDir, versionDir } from '../../../src/core/paths.js';
import { StewardError } from '../../../src/core/errors.js';
import { readMarker } from '../../../src/helper/release-store.js';
import { stageRelease } from '../../../src/helper/stage/stage-release.js';
import { gzipTar, makeReleaseTar, makeTar } from '../../fixtures/tar-writer.js';
import { makeReleaseKey, manifestFor } from '../../helpers/host.js';
import { CURRENT_VERSION, hostWithCurrent, stageBytes, type StagedHost } from '../../helpers/stage-harness.js';

// What the server does with a request for `/web.tgz`: send `body`, or its first `cutAt` bytes and
// then drop the connection; with `holdAt`, send that many bytes and wait for `release()`.
interface Serving {
  body: Buffer;
  cutAt?: number;
  holdAt?: number;
}

interface Server {
  url: string;
  serve(s: Serving): void;
  // Sends the rest of a held body.
  release(): void;
  // Bytes of the body sent so far, over every request.
  sent(): number;
}

async function startServer(t: TestContext): Promise<Server> {
  let serving: Serving = { body: Buffer.alloc(0) };
  let sent = 0;
  let release: (() => void) | null = null;
  const server = http.createServer((req, res) => {
    const s = serving;
    res.setHeader('Content-Length', s.body.length);
    const write = (b: Buffer) => {
      sent += b.length;
      res.write(b);
    };
    if (s.cutAt !== undefined) {
      write(s.body.subarray(0, s.cutAt));
      setTimeout(() => res.destroy(), 50);
    } else if (s.holdAt !== undefined) {
      write(s.body.subarray(0, s.holdAt));
      release = () => {
        write(s.body.subarray(s.holdAt));
        res.end();
      };
    } else {
      write(s.body);
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/web.tgz`,
    serve: (s) => {
      serving = s;
      release = null;
    },
    release: () => release?.(),
    sent: () => sent,
  };
}

async function withHost(t: TestContext): Promise<StagedHost> {
  const s = await hostWithCurrent();
  t.after(() => s.host.cleanup());
  return s;
}

// A release of `files` files of random (incompressible) bytes, `each` bytes each.
function bigRelease(version: string, files: number, each: number): Buffer {
  return gzipTar(makeReleaseTar('web', version, [{ path: 'server.js', content: 'console.log(1)\n' }, ...Array.from({ length: files }, (_, i) => ({ path: `data/f${i}.bin`, content: randomBytes(each) }))]));
}

// Stages web `version` from `server` under a manifest signed for `signedFor` (the served bytes
// unless told otherwise), declaring the served body's size.
async function stageFetched(s: StagedHost, server: Server, version: string, served: Buffer, signedFor: Buffer = served): Promise<StewardError | null> {
  const key = makeReleaseKey(s.host, ['web']);
  const manifest = key.sign(manifestFor('web', version, signedFor, { url: server.url, size: served.length }));
  try {
    await stageRelease(s.deps, { kind: 'helper', app: 'web', version, manifest });
    return null;
  } catch (err) {
    if (err instanceof StewardError) return err;
    throw err;
  }
}

// Nothing of `version` staged, the staging folder empty, `current` as it was.
async function assertNothingStaged(s: StagedHost, version: string): Promise<void> {
  assert.deepEqual(readdirSync(stagingDir(s.host.paths, 'web')), [], 'the staging folder is empty');
  assert.equal(existsSync(versionDir(s.host.paths, 'web', version)), false, `versions/${version} does not exist`);
  assert.equal(await fsp.readlink(currentLink(s.host.paths, 'web')), `versions/${CURRENT_VERSION}`);
}

// The files the extraction has written so far, in any attempt's staging folder.
function filesExtracted(s: StagedHost): number {
  const staging = stagingDir(s.host.paths, 'web');
  let n = 0;
  for (const attempt of readdirSync(staging)) {
    const data = path.join(staging, attempt, 'tree', 'data');
    if (existsSync(data)) n += readdirSync(data).length;
  }
  return n;
}

test('the extraction runs while the bytes arrive, and the tree and its marker are those of the same bytes from a local file', async (t) => {
  const server = await startServer(t);
  const s = await withHost(t);
  const tgz = bigRelease('2.0.0', 40, 256 * 1024);
  // The server holds back the last MiB until the extraction has written files of the first ones.
  server.serve({ body: tgz, holdAt: tgz.length - (1 << 20) });
  const staging = stageFetched(s, server, '2.0.0', tgz);
  const deadline = Date.now() + 20_000;
  while (filesExtracted(s) < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const before = filesExtracted(s);
  // Before the last byte: nothing left the staging folder.
  assert.equal(existsSync(versionDir(s.host.paths, 'web', '2.0.0')), false);
  server.release();
  assert.equal(await staging, null);
  assert.ok(before >= 5, `files extracted before the last MiB was sent: ${before}`);
  const fetched = await readMarker(s.host.paths, 'web', '2.0.0');

  const local = await withHost(t);
  assert.equal(await stageBytes(local, tgz), null);
  const copied = await readMarker(local.host.paths, 'web', '2.0.0');
  assert.ok(fetched && copied);
  assert.equal(fetched.treeDigest, copied.treeDigest);
  assert.equal(fetched.tarballIntegrity, copied.tarballIntegrity);
  assert.equal(fetched.signed, true);
  assert.deepEqual(readdirSync(stagingDir(s.host.paths, 'web')), []);
});

test('bytes of the right size that are not the signed ones: INTEGRITY_MISMATCH, and nothing is staged', async (t) => {
  const server = await startServer(t);
  const s = await withHost(t);
  const signed = bigRelease('2.0.0', 8, 64 * 1024);
  const other = Buffer.from(signed);
  other.writeUInt8((other.at(-100) as number) ^ 0xff, other.length - 100);
  server.serve({ body: other });
  const err = await stageFetched(s, server, '2.0.0', other, signed);
  assert.equal(err?.code, 'INTEGRITY_MISMATCH', err?.message);
  assert.doesNotMatch(err.message, /it is sha512-/, 'no digest of bytes the caller did not send');
  await assertNothingStaged(s, '2.0.0');
});

test('a hostile archive served in place of the signed one: INTEGRITY_MISMATCH wins over the extractor refusing it, after every byte was hashed', async (t) => {
  const server = await startServer(t);
  const s = await withHost(t);
  const signed = bigRelease('2.0.0', 8, 64 * 1024);
  // The hostile entry comes first, then enough bytes that the refusal comes long before the end.
  const hostile = gzipTar(makeTar([{ path: '../../escaped.txt', content: 'x' }, ...Array.from({ length: 8 }, (_, i) => ({ path: `pad${i}`, content: randomBytes(64 * 1024) }))]));
  server.serve({ body: hostile });
  const err = await stageFetched(s, server, '2.0.0', hostile, signed);
  assert.equal(err?.code, 'INTEGRITY_MISMATCH', err?.message);
  assert.equal(server.sent(), hostile.length, 'the fetch went on to the last byte');
  await assertNothingStaged(s, '2.0.0');
  assert.equal(existsSync(path.join(path.dirname(s.host.root), 'escaped.txt')), false);
});

test('a signed archive that is hostile: the extractor refuses it UNSAFE_ARCHIVE once its bytes matched', async (t) => {
  const server = await startServer(t);
  const s = await withHost(t);
  const hostile = gzipTar(makeReleaseTar('web', '2.0.0', [{ path: 'link', type: 'symlink', linkpath: '/etc' }, { path: 'link/passwd', content: 'x' }]));
  server.serve({ body: hostile });
  const err = await stageFetched(s, server, '2.0.0', hostile);
  assert.equal(err?.code, 'UNSAFE_ARCHIVE', err?.message);
  await assertNothingStaged(s, '2.0.0');
});

test('signed bytes that are not gzip: UNSAFE_ARCHIVE, as from a file', async (t) => {
  const server = await startServer(t);
  const s = await withHost(t);
  const plain = makeReleaseTar('web', '2.0.0');
  server.serve({ body: plain });
  const err = await stageFetched(s, server, '2.0.0', plain);
  assert.equal(err?.code, 'UNSAFE_ARCHIVE', err?.message);
  assert.match(err.message, /not a gzip file/);
  await assertNothingStaged(s, '2.0.0');
});

test('a download cut in the middle: FETCH_FAILED, the extraction ended, nothing staged; the next stage of the same version succeeds', async (t) => {
  const server = await startServer(t);
  const s = await withHost(t);
  const tgz = bigRelease('2.0.0', 16, 128 * 1024);
  server.serve({ body: tgz, cutAt: Math.floor(tgz.length / 2) });
  const err = await stageFetched(s, server, '2.0.0', tgz);
  assert.equal(err?.code, 'FETCH_FAILED', err?.message);
  await assertNothingStaged(s, '2.0.0');
  server.serve({ body: tgz });
  assert.equal(await stageFetched(s, server, '2.0.0', tgz), null);
  assert.ok(await readMarker(s.host.paths, 'web', '2.0.0'));
});
