import assert from 'node:assert/strict';
import { promises as fsp, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { hostConfigSchema } from '../../src/core/config-schema.js';
import { StewardError } from '../../src/core/errors.js';
import { currentLink, stagingDir, versionDir } from '../../src/core/paths.js';
import { systemClock } from '../../src/platform/clock.js';
import { swapSymlink } from '../../src/platform/fs-atomic.js';
import { readCurrent, readMarker } from '../../src/helper/release-store.js';
import { ensureLayout } from '../../src/helper/layout.js';
import { realStageIO } from '../../src/helper/stage/real-stage-io.js';
import { stageRelease, type StageInput } from '../../src/helper/stage/stage-release.js';
import { makeHost, makeReleaseKey, manifestFor, processApp, sri, snapshotTree, type ReleaseKey, type TestHost } from './host.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

export interface StagedHost {
  host: TestHost;
  deps: Parameters<typeof stageRelease>[0];
}

export const CURRENT_VERSION = '0.9.0';

// A host whose app `web` already runs 0.9.0 (staged for real, `current` pointing at it),
// so every attack can check that `current` is untouched.
export async function hostWithCurrent(configExtra: Record<string, unknown> = {}, opts: { inMemory?: boolean } = {}): Promise<StagedHost> {
  const config = { apps: { web: processApp() }, ...configExtra };
  const host = makeHost(config, opts);
  await ensureLayout(host.paths);
  const deps = { paths: host.paths, config: hostConfigSchema.parse(config), clock: systemClock, io: realStageIO };
  const v = CURRENT_VERSION;
  const tgz = gzipTar(makeReleaseTar('web', v, [{ path: 'server.js', content: 'console.log(1)\n' }]));
  const file = path.join(host.scratch, `web-${v}.tgz`);
  writeFileSync(file, tgz);
  await stageRelease(deps, { kind: 'admin', app: 'web', version: v, path: file, integrity: sri(tgz), allowUnsigned: true });
  await swapSymlink(currentLink(host.paths, 'web'), `versions/${v}`);
  return { host, deps };
}

// Where the bytes of a stage come from: a local file over admin.sock rules (unsigned allowed),
// or a loopback http server under a manifest signed for them, as the agent's updates come over
// helper.sock: the extraction then runs while they arrive (docs/design.md §3 step 4).
export type StageVia = 'file' | 'fetch';

// The key a host trusts for web's fetched releases, made (and written into trusted-keys/) once.
const fetchKeys = new WeakMap<StagedHost, ReleaseKey>();
function fetchKeyOf(s: StagedHost): ReleaseKey {
  let key = fetchKeys.get(s);
  if (!key) fetchKeys.set(s, (key = makeReleaseKey(s.host, ['web'])));
  return key;
}

// Stages `tgz` as web 2.0.0 (unless `extra.version` says otherwise) `via` a file or a fetch, and
// returns the error.
export async function stageBytes(s: StagedHost, tgz: Buffer, extra: Partial<StageInput> = {}, via: StageVia = 'file'): Promise<StewardError | null> {
  try {
    if (via === 'fetch') {
      await stageFetched(s, tgz, extra);
    } else {
      const file = path.join(s.host.scratch, `attack-${Date.now()}-${Math.random().toString(36).slice(2)}.tgz`);
      writeFileSync(file, tgz);
      await stageRelease(s.deps, { kind: 'admin', app: 'web', version: '2.0.0', path: file, integrity: sri(tgz), allowUnsigned: true, ...extra });
    }
    return null;
  } catch (err) {
    if (err instanceof StewardError) return err;
    throw err;
  }
}

async function stageFetched(s: StagedHost, tgz: Buffer, extra: Partial<StageInput>): Promise<void> {
  const server = http.createServer((_req, res) => {
    res.setHeader('Content-Length', tgz.length);
    res.end(tgz);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const version = extra.version ?? '2.0.0';
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/web-${version}.tgz`;
    const manifest = fetchKeyOf(s).sign(manifestFor('web', version, tgz, { url }));
    await stageRelease(s.deps, { kind: 'helper', app: 'web', version, manifest, ...extra });
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

// Runs an attack through the whole staging pipeline and checks the promise of the issue:
// refused with `code`, nothing written outside the staging folder, the staging folder
// gone, no versions/<version>, and `current` untouched and valid. `tgz` may be a function
// of the host (for archives aiming at absolute paths under it).
export async function assertStageRefused(
  tgz: Buffer | ((s: StagedHost) => Buffer),
  code: string,
  extra: Partial<StageInput> | ((s: StagedHost) => Partial<StageInput> | Promise<Partial<StageInput>>) = {},
  opts: { inMemory?: boolean; via?: StageVia; config?: Record<string, unknown> } = {},
): Promise<StewardError> {
  const s = await hostWithCurrent(opts.config ?? {}, opts);
  try {
    const input = typeof extra === 'function' ? await extra(s) : extra;
    // Its trusted key is written before the snapshot: it is not something staging changed.
    if (opts.via === 'fetch') fetchKeyOf(s);
    const base = path.dirname(s.host.root);
    const staging = stagingDir(s.host.paths, 'web');
    const before = await snapshotTree(base, (p) => p.startsWith(staging) || p.startsWith(s.host.scratch));
    const err = await stageBytes(s, typeof tgz === 'function' ? tgz(s) : tgz, input, opts.via);
    assert.ok(err, `expected a refusal with ${code}, but the archive was staged`);
    assert.equal(err.code, code, `expected ${code}, got ${err.code}: ${err.message}`);
    const after = await snapshotTree(base, (p) => p.startsWith(staging) || p.startsWith(s.host.scratch));
    assert.deepEqual([...after.entries()].sort(), [...before.entries()].sort(), 'something outside the staging folder changed');
    assert.deepEqual(await fsp.readdir(staging), [], 'the staging folder is not empty');
    const version = input.version ?? '2.0.0';
    await assert.rejects(fsp.lstat(versionDir(s.host.paths, 'web', version)), `versions/${version} exists`);
    assert.equal(await fsp.readlink(currentLink(s.host.paths, 'web')), `versions/${CURRENT_VERSION}`);
    assert.deepEqual(await readCurrent(s.host.paths, 'web'), { state: 'valid', version: CURRENT_VERSION });
    assert.ok(await readMarker(s.host.paths, 'web', CURRENT_VERSION));
    return err;
  } finally {
    s.host.cleanup();
  }
}
