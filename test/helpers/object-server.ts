import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { compressionOf, compressSync, decompressSync } from '../../src/core/compression.js';
import { indexOfTarball, keepIndexAndObjects } from '../../src/control/catalog/file-index-of.js';
import { parseIndexPath, sendIndex, sendPack, sendPatch } from '../../src/control/server/packs.js';
import { makePatches, type MadePatches } from '../../src/control/catalog/make-patches.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { stageRelease, type StageInput } from '../../src/helper/stage/stage-release.js';
import type { StageResult } from '../../src/protocol/schemas.js';
import assert from 'node:assert/strict';
import { versionDir } from '../../src/core/paths.js';
import { rereadTree } from '../../src/platform/tree-reread.js';
import { makeReleaseKey, manifestFor, sri, type ReleaseKey } from './host.js';
import type { StagedHost } from './stage-harness.js';

// A control plane's artifact routes for app `web` on loopback (docs/design.md §20): the kept tarball,
// the file index and packs of objects, served by steward-control's own handlers (packs.ts) over
// a catalog that holds every release published here. Counts the bytes each kind of answer moved,
// and lets a test change an answer's bytes on the way (an attacker on the wire, or a bad server).
export interface ObjectServer {
  base: string;
  artifactsDir: string;
  moved: { tgz: number; index: number; pack: number; patch: number; delta: number };
  requests: string[];
  // (moved: the bodies of 2xx answers only, as a client counts what it takes.)
  // Changes the body of the answer to `kind` (the whole body, decompressed for an index or a pack:
  // the test's attack).
  tamper: Partial<Record<'tgz' | 'index' | 'pack' | 'patch' | 'delta', (body: Buffer) => Buffer>>;
  // Replaces the bytes of an answer as sent (compressed), after `tamper`.
  wire: Partial<Record<'tgz' | 'index' | 'pack' | 'patch' | 'delta', (body: Buffer) => Buffer>>;
  // Cuts answers of a kind: each answer takes the next count (below 1: that share of the body),
  // sends its headers (the whole length) and that many bytes of its body, then drops the connection.
  cut: Partial<Record<'tgz' | 'index' | 'pack' | 'patch' | 'delta', number[]>>;
  // Each request's Accept-Encoding, and each answer's Content-Type, in order.
  accepts: string[];
  answered: string[];
  // How many objects each pack request asked for, in order.
  packAsks: number[];
  // Puts app web's `version` (tarball `tgz`) in the catalog with its index and objects; returns
  // the index's integrity and size as `release add --index` signs them.
  publish(version: string, tgz: Buffer): Promise<{ integrity: string; size: number }>;
  // What the last publish made as static patches (§20.5), as `release add` would; and whether
  // they are offered (default false, the pack path: every patch and index delta answers 404, as
  // from a control plane without them).
  patches: MadePatches | null;
  offerPatches: boolean;
  close(): void;
}

const anyRelease = { read: async (fn: (tx: unknown) => unknown) => fn({ releases: { get: async () => ({}) } }) } as unknown as ControlStore;

export async function startObjectServer(): Promise<ObjectServer> {
  const artifactsDir = mkdtempSync(path.join(os.tmpdir(), 'steward-objsrv-'));
  const moved = { tgz: 0, index: 0, pack: 0, patch: 0, delta: 0 };
  const requests: string[] = [];
  const tamper: ObjectServer['tamper'] = {};
  const cut: ObjectServer['cut'] = {};
  const wire: ObjectServer['wire'] = {};
  const accepts: string[] = [];
  const answered: string[] = [];
  const packAsks: number[] = [];
  const server = http.createServer((req, res) => {
    const url = req.url ?? '';
    requests.push(`${req.method} ${url}`);
    accepts.push(String(req.headers['accept-encoding'] ?? ''));
    const rest = url.replace(/^\/v1\/artifacts\//, '');
    const beside = parseIndexPath(rest);
    const kind = !beside ? 'tgz' : beside.kind === 'index-delta' ? 'delta' : beside.kind;
    if (kind === 'pack') {
      const body: Buffer[] = [];
      req.on('data', (c: Buffer) => body.push(c));
      req.on('end', () => packAsks.push((JSON.parse(Buffer.concat(body).toString()) as { sha256: string[] }).sha256.length));
    }
    // Each answer is taken whole, counted, and maybe changed before it is sent.
    const chunks: Buffer[] = [];
    const realWrite = res.write.bind(res);
    const realEnd = res.end.bind(res);
    const realHead = res.writeHead.bind(res);
    let status = 200;
    let headers: http.OutgoingHttpHeaders = {};
    res.writeHead = ((code: number, h?: http.OutgoingHttpHeaders) => {
      status = code;
      headers = h ?? {};
      return res;
    }) as typeof res.writeHead;
    res.write = ((c: Buffer | string) => {
      chunks.push(Buffer.from(c));
      return true;
    }) as typeof res.write;
    res.end = ((c?: Buffer | string) => {
      if (c) chunks.push(Buffer.from(c));
      let body: Buffer = Buffer.concat(chunks);
      const change = tamper[kind];
      // The index and packs travel compressed: the change is made to what they decompress to,
      // compressed again as they came.
      if (change && status === 200) {
        const c = compressionOf(body);
        body = kind === 'tgz' || kind === 'patch' || kind === 'delta' ? change(body) : compressSync(c === 'zstd' ? 'zstd' : 'gzip', change(decompressSync(body, 1 << 30, 'the answer')));
      }
      const rewire = wire[kind];
      if (rewire && status === 200) body = rewire(body);
      answered.push(String(headers['content-type'] ?? ''));
      const share = status === 200 ? cut[kind]?.shift() : undefined;
      const cutAt = share === undefined ? undefined : share < 1 ? Math.floor(body.length * share) : share;
      realHead(status, { ...headers, 'content-length': String(body.length) });
      if (cutAt !== undefined) {
        moved[kind] += Math.min(cutAt, body.length);
        // Dropped once the bytes before the cut are handed to the kernel, so they all arrive.
        realWrite(body.subarray(0, cutAt), () => setTimeout(() => res.destroy(), 20));
        return res;
      }
      if (status >= 200 && status < 300) moved[kind] += body.length;
      realWrite(body);
      return realEnd();
    }) as typeof res.end;
    if (beside?.kind === 'pack') return void sendPack(anyRelease, artifactsDir, beside, req, res);
    if ((beside?.kind === 'patch' || beside?.kind === 'index-delta') && !srv.offerPatches) {
      res.writeHead(404, {});
      return void res.end('{}');
    }
    if (beside?.kind === 'patch' || beside?.kind === 'index-delta') return void sendPatch(anyRelease, artifactsDir, { ...beside, kind: beside.kind, from: beside.from as string }, req, res, false, null);
    if (beside) return void sendIndex(anyRelease, artifactsDir, beside, req, res, false);
    const m = /^web\/([^/]+)\.tgz$/.exec(rest);
    try {
      const bytes = readFileSync(path.join(artifactsDir, 'web', `${m?.[1]}.tgz`));
      res.writeHead(200, {});
      res.end(bytes);
    } catch {
      res.writeHead(404, {});
      res.end('{}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const srv: ObjectServer = {
    base,
    artifactsDir,
    moved,
    requests,
    tamper,
    wire,
    cut,
    accepts,
    answered,
    packAsks,
    patches: null,
    offerPatches: false,
    async publish(version, tgz) {
      mkdirSync(path.join(artifactsDir, 'web'), { recursive: true });
      const file = path.join(artifactsDir, 'web', `${version}.tgz`);
      writeFileSync(file, tgz);
      const index = await indexOfTarball(file);
      await keepIndexAndObjects(artifactsDir, 'web', version, file, index);
      srv.patches = await makePatches(artifactsDir, 'web', version);
      return index;
    },
    close() {
      server.closeAllConnections();
      server.close();
      rmSync(artifactsDir, { recursive: true, force: true });
    },
  };
  return srv;
}

// The key each host trusts for web, made once per host.
const keys = new WeakMap<StagedHost, ReleaseKey>();
export function keyOf(s: StagedHost): ReleaseKey {
  let k = keys.get(s);
  if (!k) keys.set(s, (k = makeReleaseKey(s.host, ['web'])));
  return k;
}

// The manifest `release add --index` signs for web `version` on `srv` (the index's fields as given).
export function indexedManifest(s: StagedHost, srv: ObjectServer, version: string, tgz: Buffer, index: { integrity: string; size: number }, extra: Record<string, unknown> = {}) {
  const at = `${srv.base}/v1/artifacts/web/${version}`;
  return keyOf(s).sign(manifestFor('web', version, tgz, { url: `${at}.tgz`, index: { url: `${at}.index.json`, ...index }, ...extra }));
}

// Publishes and stages web `version` from `srv` under a manifest with its index, as the agent's update would.
export async function stageIndexed(s: StagedHost, srv: ObjectServer, version: string, tgz: Buffer, extra: Partial<StageInput> = {}): Promise<StageResult> {
  const index = await srv.publish(version, tgz);
  return stageRelease(s.deps, { kind: 'helper', app: 'web', version, manifest: indexedManifest(s, srv, version, tgz, index), ...extra });
}

// The tree `r` staged on `s` is the one `tgz` gives staged the old way (its tarball, no objects) on
// `peer`: the same digest, tarball integrity and walk, byte for byte and mode for mode.
export async function assertTreeAsTarballGives(s: StagedHost, r: StageResult, peer: StagedHost, version: string, tgz: Buffer): Promise<void> {
  const file = path.join(peer.host.scratch, `web-${version}.tgz`);
  writeFileSync(file, tgz);
  const old = await stageRelease({ ...peer.deps, objects: false }, { kind: 'admin', app: 'web', version, path: file, integrity: sri(tgz), allowUnsigned: true });
  assert.equal(r.treeDigest, old.treeDigest);
  assert.equal(r.tarballIntegrity, old.tarballIntegrity);
  assert.deepEqual(await rereadTree(versionDir(s.host.paths, 'web', version)), await rereadTree(versionDir(peer.host.paths, 'web', version)));
}

export function sha256(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}
