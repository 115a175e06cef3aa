// Row 35 (issue 35, docs/design.md §20): the second release of a real pair staged from its signed file
// index and a pack of the files the host lacks, against the same release staged from its full
// tarball (today's path, no objects), in turn, run by run, both fetched over loopback http from
// steward-control's own index and pack handlers (test/helpers/object-server.ts):
// - `35 bytes`: bytes moved (index + pack) / the tarball's bytes (goal <= 10 %);
// - `35 time`: staging time of the second release by objects / by the tarball (goal <= 0.25);
// - `35 disk`: disk of 5 kept versions (objects) / disk of one version (goal <= 1.3), by unique
//   inode; the same 5 staged without objects are in `extra`;
// - `35 patch bytes` and `35 patch time` (docs/design.md §20.5), where the runtime has zstd: the
//   second release staged from its index and the static zstd patch from the first (the control
//   plane's own, made as `release add` makes it), against the tarball (goals <= 0.01 and <= 0.25).
//   The `35 bytes`/`35 time` rows are the pack path: no patch offered.
// The pair: `--pair DIR1,DIR2`, two app folders, each tarred with a steward-release.json as a release
// (make them with `npm install node-red@4.1.14` and `node-red@4.1.15` into two empty folders, say;
// bench/README.md). Without --pair, or with --quick, a synthetic pair: a node_modules-like tree
// and the same tree with 3 % of its files changed.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hasZstd } from '../src/core/compression.js';
import { hostConfigSchema } from '../src/core/config-schema.js';
import { appDir } from '../src/core/paths.js';
import { ensureLayout } from '../src/helper/layout.js';
import { realStageIO } from '../src/helper/stage/real-stage-io.js';
import { stageRelease } from '../src/helper/stage/stage-release.js';
import { systemClock } from '../src/platform/clock.js';
import { syncFileSystem } from '../src/platform/exec.js';
import { makeHost, makeReleaseKey, manifestFor, processApp, sri, type TestHost } from '../test/helpers/host.js';
import { startObjectServerProcess } from './lib/object-server-process.js';
import { benchArgs, ms, note, printRow, ratios, series } from './lib.js';
import { makeAppTree, QUICK_TREE } from './stage-input.js';

const args = benchArgs(3, 1, ['--pair']);
const scratch = mkdtempSync(path.join(os.tmpdir(), 'steward-bench-objects-'));

// A release tarball of `dir`'s content as web `version` (a copy with steward-release.json added).
function releaseOf(dir: string, version: string): Buffer {
  const tree = path.join(scratch, `tree-${version}-${randomBytes(3).toString('hex')}`);
  cpSync(dir, tree, { recursive: true, verbatimSymlinks: true });
  writeFileSync(path.join(tree, 'steward-release.json'), JSON.stringify({ name: 'web', version, start: { command: ['node', 'server.js'] } }) + '\n');
  const out = `${tree}.tgz`;
  execFileSync('tar', ['-C', tree, '-czf', out, ...readdirSync(tree).sort()]);
  rmSync(tree, { recursive: true, force: true });
  return readFileSync(out);
}

// The pair's two folders: --pair, else a synthetic tree and a copy with 3 % of its files changed.
function pairDirs(): { a: string; b: string; what: string } {
  const given = args.rest.pair;
  if (given && !args.quick) {
    const [a, b] = given.split(',');
    if (!a || !b) throw new Error('--pair takes DIR1,DIR2');
    return { a: path.resolve(a), b: path.resolve(b), what: `${path.basename(a)} -> ${path.basename(b)}` };
  }
  const a = path.join(scratch, 'pair-a');
  makeAppTree(a, true, args.quick ? QUICK_TREE : { smallFiles: 3000, large: [2 << 20] });
  const b = path.join(scratch, 'pair-b');
  cpSync(a, b, { recursive: true });
  const files: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) files.push(p);
    }
  };
  walk(b);
  files.filter((f) => f.endsWith('.js')).filter((_, i) => i % 33 === 0).forEach((f) => writeFileSync(f, randomBytes(64).toString('hex') + readFileSync(f, 'utf8')));
  return { a, b, what: 'a synthetic node_modules-like tree, 3 % of its files changed' };
}

function newHost(): { host: TestHost; deps: Parameters<typeof stageRelease>[0] } {
  const config = { apps: { web: processApp({ keepReleases: 10 }) } };
  const host = makeHost(config);
  return { host, deps: { paths: host.paths, config: hostConfigSchema.parse(config), clock: systemClock, io: realStageIO } };
}

// Disk used under the app's folder (versions and objects), each inode counted once.
function diskOf(dir: string): number {
  const seen = new Set<number>();
  let bytes = 0;
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = path.join(d, name);
      const st = lstatSync(p);
      if (!seen.has(st.ino)) {
        seen.add(st.ino);
        bytes += st.blocks * 512;
      }
      if (st.isDirectory()) walk(p);
    }
  };
  walk(dir);
  return bytes;
}

// The floor of any tree made of links: the time to make `tree`'s folders and a hardlink per file
// of it in a fresh folder on the same file system, and nothing else (no fetch, no check, no fsync).
function linkFloorMs(tree: string): number {
  const dirs: string[] = [];
  const files: string[] = [];
  const walk = (rel: string) => {
    for (const e of readdirSync(path.join(tree, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        dirs.push(r);
        walk(r);
      } else if (e.isFile()) files.push(r);
    }
  };
  walk('');
  const out = path.join(scratch, `floor-${randomBytes(3).toString('hex')}`);
  const t0 = process.hrtime.bigint();
  mkdirSync(out, { mode: 0o700 });
  for (const d of dirs) mkdirSync(path.join(out, d), { mode: 0o700 });
  for (const f of files) linkSync(path.join(tree, f), path.join(out, f));
  const took = ms(t0);
  rmSync(out, { recursive: true, force: true });
  return took;
}

// What one mkdir costs in the scratch folder, in µs (the median of 300). On an ext4 whose block
// group under that folder is full it is 100-350 µs instead of 10-25 (bench/README.md): the stage
// from objects makes a tree's every folder, so a slow mkdir moves the time rows toward 1.
function mkdirMicros(): number {
  const dir = path.join(scratch, `mkdir-probe-${randomBytes(3).toString('hex')}`);
  mkdirSync(dir);
  const took: number[] = [];
  for (let i = 0; i < 300; i++) {
    const t0 = process.hrtime.bigint();
    mkdirSync(path.join(dir, `d${i}`));
    took.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  rmSync(dir, { recursive: true, force: true });
  return series(took).median;
}

async function stageFile(h: ReturnType<typeof newHost>, version: string, tgz: Buffer, objects: boolean): Promise<void> {
  const file = path.join(h.host.scratch, `web-${version}.tgz`);
  writeFileSync(file, tgz);
  await stageRelease({ ...h.deps, objects }, { kind: 'admin', app: 'web', version, path: file, integrity: sri(tgz), allowUnsigned: true });
}

async function main(): Promise<void> {
  const { a, b, what } = pairDirs();
  const mkdirUs = mkdirMicros();
  if (mkdirUs > 60) note(args, `a mkdir in ${os.tmpdir()} costs ${mkdirUs.toFixed(0)} µs (a healthy ext4 takes 10-25): the time rows are skewed toward 1; set TMPDIR to a folder where it is fast (bench/README.md)`);
  const v1 = releaseOf(a, '1.0.0');
  const versions = ['1.1.0', '1.1.1', '1.1.2', '1.1.3'];
  const later = new Map(versions.map((v) => [v, releaseOf(b, v)]));
  const v2 = later.get('1.1.0') as Buffer;
  // The control plane's routes in a process of their own, as on a real fleet (lib/object-server-process.ts).
  const srv = await startObjectServerProcess();
  const indexes = new Map<string, { integrity: string; size: number }>();
  for (const [v, tgz] of [['1.0.0', v1] as const, ...later]) {
    const file = path.join(scratch, `published-${v}.tgz`);
    writeFileSync(file, tgz);
    indexes.set(v, await srv.publish(v, file));
  }
  const manifest = (h: ReturnType<typeof newHost>, key: ReturnType<typeof makeReleaseKey>, v: string, tgz: Buffer, withIndex: boolean) => {
    const at = `${srv.base}/v1/artifacts/web/${v}`;
    return key.sign(manifestFor('web', v, tgz, { url: `${at}.tgz`, ...(withIndex ? { index: { url: `${at}.index.json`, ...indexes.get(v) } } : {}) }));
  };
  const objMs: number[] = [];
  const floorMs: number[] = [];
  const viaTarball = { objects: 0, patch: 0 };
  const fullMs: number[] = [];
  const moved: number[] = [];
  const patchMs: number[] = [];
  const patchMoved: number[] = [];
  const zstd = hasZstd();
  const hosts: TestHost[] = [];
  try {
    for (let run = 0; run < args.runs; run++) {
      const order = run % 2 === 0 ? (['objects', 'full', 'patch'] as const) : (['patch', 'full', 'objects'] as const);
      for (const side of order.filter((x) => x !== 'patch' || zstd)) {
        const h = newHost();
        hosts.push(h.host);
        await ensureLayout(h.host.paths);
        const key = makeReleaseKey(h.host, ['web']);
        const objects = side !== 'full';
        await stageFile(h, '1.0.0', v1, objects);
        const m = manifest(h, key, '1.1.0', v2, objects);
        await srv.offerPatches(side === 'patch');
        // Each side's stage starts from a file system with nothing left to write, as on a host
        // whose last stage was minutes before (the kernel writes dirty pages within 30 s):
        // otherwise its syncfs also wrote what the untimed stage of 1.0.0 left (the objects
        // side's kept index and record, 2.4 MB, the peer's less).
        await syncFileSystem(appDir(h.host.paths, 'web'));
        const t0 = process.hrtime.bigint();
        const r = await stageRelease({ ...h.deps, objects }, { kind: 'helper', app: 'web', version: '1.1.0', manifest: m });
        const took = ms(t0);
        // A pair that shares less than half its bytes (a major release) stages from the tarball
        // on the objects side, as a host would, and from the patch only if it is under half: told.
        if (objects && r.via !== 'objects') viaTarball[side] += 1;
        if (objects && r.via !== 'objects') note(args, `the ${side} side staged via ${r.via}: ${r.fallback?.message ?? ''}`);
        if (side === 'objects') {
          objMs.push(took);
          moved.push(r.fetchedBytes ?? NaN);
          floorMs.push(linkFloorMs(path.join(appDir(h.host.paths, 'web'), 'versions', '1.1.0')));
        } else if (side === 'patch') {
          patchMs.push(took);
          patchMoved.push(r.fetchedBytes ?? NaN);
        } else fullMs.push(took);
      }
    }
    // Disk: 5 versions through objects, 5 without, against one.
    const disk = async (objects: boolean, n: number): Promise<number> => {
      const h = newHost();
      hosts.push(h.host);
      await ensureLayout(h.host.paths);
      await stageFile(h, '1.0.0', v1, objects);
      for (const v of versions.slice(0, n - 1)) await stageFile(h, v, later.get(v) as Buffer, objects);
      return diskOf(appDir(h.host.paths, 'web'));
    };
    const one = await disk(false, 1);
    const fiveObjects = await disk(true, 5);
    const fivePlain = await disk(false, 5);
    const tarBytes = moved.map(() => v2.length);
    const byteRatios = ratios(moved, tarBytes);
    const timeRatios = ratios(objMs, fullMs);
    const pair = `${what}; tarball ${v2.length} bytes`;
    printRow(args, { row: '35 bytes', what: `bytes moved to stage the second release of a pair by objects (index + pack) vs its tarball (${pair})`, unit: 'bytes', steward: series(moved), peer: series(tarBytes), peerWhat: 'the full tarball', ratio: series(byteRatios), target: 'ratio <= 0.10', met: series(byteRatios).median <= 0.1 });
    printRow(args, { row: '35 time', what: `staging time of the second release by objects vs by its full tarball, both over loopback http (${pair})`, unit: 'ms', steward: series(objMs), peer: series(fullMs), peerWhat: 'the full tarball, fetched and extracted (no objects)', ratio: series(timeRatios), target: 'ratio <= 0.25', met: series(timeRatios).median <= 0.25, extra: { linkFloorMs: series(floorMs).median, linkFloorRatio: series(ratios(floorMs, fullMs)).median, runsViaTarball: viaTarball.objects, scratchMkdirUs: Math.round(mkdirUs) } });
    if (zstd) {
      const patchBytes = ratios(patchMoved, patchMoved.map(() => v2.length));
      const patchTime = ratios(patchMs, fullMs.slice(0, patchMs.length));
      printRow(args, { row: '35 patch bytes', what: `bytes moved to stage the second release of a pair by its index and a static zstd patch from the first vs its tarball (${pair})`, unit: 'bytes', steward: series(patchMoved), peer: series(patchMoved.map(() => v2.length)), peerWhat: 'the full tarball', ratio: series(patchBytes), target: 'ratio <= 0.01', met: series(patchBytes).median <= 0.01 });
      printRow(args, { row: '35 patch time', what: `staging time of the second release by index and patch vs by its full tarball, both over loopback http (${pair})`, unit: 'ms', steward: series(patchMs), peer: series(fullMs), peerWhat: 'the full tarball, fetched and extracted (no objects)', ratio: series(patchTime), target: 'ratio <= 0.25', met: series(patchTime).median <= 0.25, extra: { runsViaTarball: viaTarball.patch } });
    } else note(args, `rows 35 patch bytes and 35 patch time: not measured, this runtime (Node ${process.versions.node}) has no zstd (Node 22.15 and later have it), so no patch is made or taken`);
    const diskRatio = fiveObjects / one;
    printRow(args, {
      row: '35 disk',
      what: `disk of 5 kept versions (1 of the first tree, 4 of the second under new versions) through objects vs one version (${what})`,
      unit: 'bytes',
      steward: series([fiveObjects]),
      peer: series([one]),
      peerWhat: 'one version staged',
      ratio: series([diskRatio]),
      target: 'ratio <= 1.3',
      met: diskRatio <= 1.3,
      extra: { fiveWithoutObjectsRatio: fivePlain / one },
    });
  } finally {
    await srv.close();
    for (const h of hosts) h.cleanup();
  }
}

main()
  .catch((err) => {
    note(args, `bench/objects failed: ${(err as Error).stack ?? String(err)}`);
    process.exitCode = 1;
  })
  .finally(() => rmSync(scratch, { recursive: true, force: true }));
