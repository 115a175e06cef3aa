import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { appDir } from '../src/core/paths.js';
import { KEEP_WARM_MS } from '../src/platform/tarball.js';
import { callHelper } from '../src/protocol/client.js';
import { BIN, makeHost, makeReleaseKey, manifestFor, processApp } from '../test/helpers/host.js';
import { benchArgs, cpuMsOf, haveCommand, ms, printRow, ratios, series, startInstalledHelper, type Series } from './lib.js';
import { FULL_TREE, QUICK_TREE, makeAppTree, tarballOf, type TreeShape } from './stage-input.js';

// Row 1: `agentctl stage` of a local tarball through a real helper (on a temp --root) against
// what a shell script would do with the same tarball, in turn, pair by pair, at three sizes:
// - the bare GNU peer: sha512sum, tar xzf, sync -f (target: ratio <= 1.8);
// - the same-work peer, which does what steward does to the bytes: sha512sum, tar xzf, a
//   sha256 of every file (the marker's tree digest), chmod -R a-w, sync -f (target <= 1.25);
// - the floor, `pigz -dc | tar x` (no hash, no sync: the unpacking alone), printed beside.
// Each run also stages a twin tarball over admin.sock from this process (`overSocketMs` and
// `overSocketRatio`): the same stage without agentctl's start, which is most of the small size's.
// `1 fixed`: the cost of a stage that is not the bytes' work: a release of three small files
// staged over admin.sock (no agentctl), target < 50 ms; agentctl's own start is row 6's.
// Trees are removed only after the last run: on an ext4 without a journal (this VM's) the
// inode allocator skips every inode freed in the last 60-360 s one by one, so deleting the
// last run's 11,000 inodes made the next run's file creations pay for them (perf of an
// extraction right after such a delete: 45% of its samples in ext4's recently_deleted),
// by an amount that depends on which block group each side's folder lands in.

// `--fs tmpfs` puts the whole host in memory (tempBase(true)): on this VM's shared disk the
// peers' own times swing 3x with other work's writeback, which tmpfs takes out of both sides.
const args = benchArgs(5, 1, ['--fs']);
const inMemory = args.rest.fs === 'tmpfs';
if (args.rest.fs !== undefined && !inMemory && args.rest.fs !== 'disk') throw new Error('--fs takes tmpfs or disk');
for (const cmd of ['tar', 'sha512sum', 'sha256sum', 'find', 'chmod', 'sync']) if (!haveCommand(cmd)) throw new Error(`bench/stage needs ${cmd} on PATH`);
const havePigz = haveCommand('pigz');

const SIZES: Array<{ label: string; shape: TreeShape }> = args.quick
  ? [{ label: 'quick', shape: QUICK_TREE }]
  : [
      { label: '5 MB', shape: { smallFiles: 1000, large: [4 << 20] } },
      { label: '19 MB', shape: FULL_TREE },
      { label: '80 MB', shape: { smallFiles: 8000, large: [40 << 20, 24 << 20, 12 << 20] } },
    ];
const TINY: TreeShape = { smallFiles: 1, large: [] };

// `1 fetch <size>`: the same tarball staged from a signed manifest whose URL is an http server
// on loopback (another process), which the helper fetches itself: its extraction runs while the
// bytes arrive and are hashed (docs/design.md §3 step 4). Its peer does the same work as the bytes
// arrive: curl into tee, which feeds sha512sum and tar at once, then the per-file sha256, the
// chmod and the sync.
const FETCH_PEER = 'curl -fsS "$1" | tee >(sha512sum >/dev/null) | tar -xz -C "$2" && find "$2" -type f -exec sha256sum {} + >/dev/null && chmod -R a-w "$2" && sync -f "$2"';
const haveCurl = haveCommand('curl') && haveCommand('bash');

const PEERS = {
  bare: 'sha512sum "$1" >/dev/null && tar -xzf "$1" -C "$2" && sync -f "$2"',
  sameWork: 'sha512sum "$1" >/dev/null && tar -xzf "$1" -C "$2" && find "$2" -type f -exec sha256sum {} + >/dev/null && chmod -R a-w "$2" && sync -f "$2"',
  floor: 'pigz -dc "$1" | tar -x -C "$2"',
} as const;
type PeerName = keyof typeof PEERS;

const host = makeHost({ apps: { web: processApp({ keepReleases: 2 }) } }, { inMemory });
const helper = await startInstalledHelper(host);
const helperPid = helper.child.pid as number;
// Beside steward's own staging folder (<app>/.staging/<attempt>), so that both sides' inodes
// are allocated near the same parent folder (ext4 places a new folder's inodes by its parent).
const peerBase = path.join(appDir(host.paths, 'web'), '.peer');
let versions = 0;
let reqId = 1;

interface Tarball {
  file: string;
  version: string;
  integrity: string;
  size: number;
}

function makeTarball(tree: ReturnType<typeof makeAppTree>): Tarball {
  const version = `1.0.${versions++}`;
  const file = path.join(host.scratch, `web-${version}.tgz`);
  tarballOf(tree, 'web', version, file);
  const integrity = 'sha512-' + createHash('sha512').update(readFileSync(file)).digest('base64');
  return { file, version, integrity, size: statSync(file).size };
}

// What one side of a pair took: wall ms and CPU ms.
interface Timed {
  wall: number;
  cpu: number;
}

// One `agentctl stage web <version> <source...>`: wall ms and CPU ms (helper, all its threads,
// plus agentctl).
function agentctlStage(version: string, source: string[]): Timed {
  const cpu = cpuMsOf('self', true) + cpuMsOf(helperPid);
  const start = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [BIN.agentctl, '--root', host.root, 'stage', 'web', version, ...source, '--json'], { encoding: 'utf8' });
  const wall = ms(start);
  if (r.status !== 0) throw new Error(`agentctl stage ${source[0]} exited ${r.status}: ${r.stderr}${r.stdout}`);
  return { wall, cpu: cpuMsOf('self', true) + cpuMsOf(helperPid) - cpu };
}

const stageWithAgentctl = (t: Tarball): Timed => agentctlStage(t.version, ['--file', t.file, '--integrity', t.integrity, '--allow-unsigned']);

// A peer script (`shell -c script shell source dest`) into a fresh folder `name` beside steward's
// staging folder: wall ms and CPU ms (the script and its children).
function timePeer(shell: 'sh' | 'bash', script: string, what: string, source: string, name: string): Timed {
  mkdirSync(peerBase, { recursive: true });
  const dest = path.join(peerBase, name);
  mkdirSync(dest);
  const cpu = cpuMsOf('self', true);
  const start = process.hrtime.bigint();
  const p = spawnSync(shell, ['-c', script, shell, source, dest]);
  const wall = ms(start);
  if (p.status !== 0) throw new Error(`the ${what} peer exited ${p.status}: ${p.stderr}`);
  return { wall, cpu: cpuMsOf('self', true) - cpu };
}

// Runs each tarball's sides in turn, a global sync before each; run 0 is a warm-up, not counted.
async function alternate<K extends string>(tarballs: Tarball[], sidesOf: (t: Tarball) => Array<[K, () => Timed | Promise<Timed>]>, wall: Record<K, number[]>, cpu: Record<K, number[]>): Promise<void> {
  for (const [i, t] of tarballs.entries()) {
    for (const [name, run] of sidesOf(t)) {
      execFileSync('sync');
      const r = await run();
      if (i > 0) {
        wall[name].push(r.wall);
        cpu[name].push(r.cpu);
      }
    }
    rmSync(t.file);
  }
}

// One stage over admin.sock from this process (no agentctl start): wall ms and the helper's CPU ms.
async function timeOverSocket(t: Tarball): Promise<Timed> {
  const cpu = cpuMsOf(helperPid);
  const start = process.hrtime.bigint();
  await callHelper(host.paths.adminSock, { v: 1, id: reqId++, op: 'stage', app: 'web', version: t.version, path: t.file, integrity: t.integrity, allowUnsigned: true });
  return { wall: ms(start), cpu: cpuMsOf(helperPid) - cpu };
}

const stageOverSocket = async (t: Tarball): Promise<number> => (await timeOverSocket(t)).wall;

// The tarballs' http server: a node process serving host.scratch by file name, with its length.
async function startFileServer(dir: string): Promise<{ origin: string; stop: () => void }> {
  const code = `const http = require('node:http'); const fs = require('node:fs'); const path = require('node:path');
    const s = http.createServer((req, res) => { const f = path.join(${JSON.stringify(dir)}, path.basename(req.url));
      fs.stat(f, (err, st) => { if (err) { res.statusCode = 404; return res.end(); } res.setHeader('Content-Length', st.size); fs.createReadStream(f).pipe(res); }); });
    s.listen(0, '127.0.0.1', () => console.log(s.address().port));`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (b: Buffer) => resolve(b.toString().trim()));
    child.once('exit', (c) => reject(new Error(`the bench's file server exited ${c}`)));
  });
  return { origin: `http://127.0.0.1:${port}`, stop: () => child.kill() };
}

const releaseKey = makeReleaseKey(host, ['web']);

// One `agentctl stage --manifest`: the helper fetches the tarball from `origin`.
function stageFetched(t: Tarball, origin: string): Timed {
  const manifest = path.join(host.scratch, `web-${t.version}.manifest.json`);
  writeFileSync(manifest, JSON.stringify(releaseKey.sign(manifestFor('web', t.version, readFileSync(t.file), { url: `${origin}/${path.basename(t.file)}` }))));
  return agentctlStage(t.version, ['--manifest', manifest]);
}

const runFetchPeer = (t: Tarball, origin: string): Timed => timePeer('bash', FETCH_PEER, 'fetch', `${origin}/${path.basename(t.file)}`, `${t.version}-fetch`);
const runPeer = (name: PeerName, t: Tarball): Timed => timePeer('sh', PEERS[name], name, t.file, `${t.version}-${name}`);

const median = (xs: number[]): number => series(xs).median;

try {
  for (const { label, shape } of SIZES) {
    const tree = makeAppTree(path.join(host.scratch, `tree-${label.replace(/ /g, '')}`), args.quick, shape);
    type Side = 'steward' | 'socket' | PeerName;
    const wall: Record<Side, number[]> = { steward: [], socket: [], bare: [], sameWork: [], floor: [] };
    const cpu: Record<Side, number[]> = { steward: [], socket: [], bare: [], sameWork: [], floor: [] };
    // One tarball per version (its release file names it), all made first: making one between
    // two stages put seconds between them, and at 80 MB more than the warm worker waits. Each
    // has a twin of another version, staged over admin.sock from this process: the same stage
    // without agentctl's start, to tell the two costs apart.
    const tarballs = Array.from({ length: args.runs + 1 }, () => makeTarball(tree));
    const twins = new Map(tarballs.map((t) => [t, makeTarball(tree)]));
    const size = (tarballs[0] as Tarball).size;
    await alternate(
      tarballs,
      (t): Array<[Side, () => Timed | Promise<Timed>]> => [
        ['steward', () => stageWithAgentctl(t)],
        [
          'socket',
          async () => {
            const twin = twins.get(t) as Tarball;
            const r = await timeOverSocket(twin);
            rmSync(twin.file);
            return r;
          },
        ],
        ['bare', () => runPeer('bare', t)],
        ['sameWork', () => runPeer('sameWork', t)],
        ...(havePigz ? [['floor', () => runPeer('floor', t)] as ['floor', () => Timed]] : []),
      ],
      wall,
      cpu,
    );
    const what = `stage a ${(size / 1e6).toFixed(1)} MB tarball of ${tree.files} files from a local file`;
    const floor: Record<string, unknown> = havePigz
      ? { floorMs: median(wall.floor), floorWhat: 'pigz -dc | tar x', ratioToFloor: median(ratios(wall.steward, wall.floor)) }
      : { floorWhat: 'pigz not on PATH: no floor line' };
    const overSocket = { overSocketMs: median(wall.socket), overSocketWhat: 'the same stage over admin.sock from the bench (no agentctl start)' };
    const extra = { tarballBytes: size, files: tree.files, fs: inMemory ? 'tmpfs' : 'disk', cpuMsSteward: median(cpu.steward), ...overSocket, ...floor };
    const sizeTag = args.quick ? '' : ` ${label}`;
    const sameWork = series(ratios(wall.steward, wall.sameWork));
    printRow(args, {
      row: `1${sizeTag}`,
      what: `${what}, beside a peer doing the same work`,
      unit: 'ms',
      steward: series(wall.steward),
      peer: series(wall.sameWork),
      peerWhat: 'sha512sum + tar xzf + sha256sum of every file + chmod -R a-w + sync -f',
      ratio: sameWork,
      target: 'ratio <= 1.25',
      met: sameWork.median <= 1.25,
      extra: { ...extra, overSocketRatio: median(ratios(wall.socket, wall.sameWork)), cpuMsPeer: median(cpu.sameWork), cpuRatio: median(ratios(cpu.steward, cpu.sameWork)) },
    });
    const bare = series(ratios(wall.steward, wall.bare));
    printRow(args, {
      row: `1${sizeTag} bare`,
      what: `${what}, beside GNU tar alone`,
      unit: 'ms',
      steward: series(wall.steward),
      peer: series(wall.bare),
      peerWhat: 'sha512sum + tar xzf + sync -f',
      ratio: bare,
      target: 'ratio <= 1.8',
      met: bare.median <= 1.8,
      extra: { ...extra, overSocketRatio: median(ratios(wall.socket, wall.bare)), cpuMsPeer: median(cpu.bare), cpuRatio: median(ratios(cpu.steward, cpu.bare)) },
    });
  }

  if (haveCurl) {
    const server = await startFileServer(host.scratch);
    try {
      for (const { label, shape } of SIZES) {
        const tree = makeAppTree(path.join(host.scratch, `tree-fetch-${label.replace(/ /g, '')}`), args.quick, shape);
        const tarballs = Array.from({ length: args.runs + 1 }, () => makeTarball(tree));
        const size = (tarballs[0] as Tarball).size;
        const wall = { steward: [] as number[], peer: [] as number[] };
        const cpu = { steward: [] as number[], peer: [] as number[] };
        await alternate(tarballs, (t): Array<['steward' | 'peer', () => Timed]> => [['steward', () => stageFetched(t, server.origin)], ['peer', () => runFetchPeer(t, server.origin)]], wall, cpu);
        const ratio = series(ratios(wall.steward, wall.peer));
        printRow(args, {
          row: `1 fetch${args.quick ? '' : ` ${label}`}`,
          what: `stage a ${(size / 1e6).toFixed(1)} MB tarball of ${tree.files} files from a signed manifest's http URL on loopback (the extraction runs as the bytes arrive)`,
          unit: 'ms',
          steward: series(wall.steward),
          peer: series(wall.peer),
          peerWhat: 'curl | tee >(sha512sum) | tar xz, then sha256sum of every file + chmod -R a-w + sync -f',
          ratio,
          target: 'ratio <= 1.25 (as row 1)',
          met: ratio.median <= 1.25,
          extra: { tarballBytes: size, files: tree.files, fs: inMemory ? 'tmpfs' : 'disk', cpuMsSteward: median(cpu.steward), cpuMsPeer: median(cpu.peer), cpuRatio: median(ratios(cpu.steward, cpu.peer)) },
        });
      }
    } finally {
      server.stop();
    }
  }

  // 1 fixed: what a stage costs beyond its bytes. Warm: right after another stage (the
  // extraction worker of the last one still waits, KEEP_WARM_MS); cold: after the worker
  // ended, as the first stage of a quiet helper (full runs only: each waits KEEP_WARM_MS).
  const tiny = makeAppTree(path.join(host.scratch, 'tree-tiny'), args.quick, TINY);
  const warm: number[] = [];
  const viaAgentctl: number[] = [];
  const peer: number[] = [];
  for (let i = 0; i <= args.runs; i++) {
    const a = makeTarball(tiny);
    const b = makeTarball(tiny);
    const s = await stageOverSocket(a);
    const c = stageWithAgentctl(b).wall;
    const p = runPeer('sameWork', b).wall;
    if (i > 0) {
      warm.push(s);
      viaAgentctl.push(c);
      peer.push(p);
    }
  }
  const cold: number[] = [];
  for (let i = 0; !args.quick && i < 3; i++) {
    await new Promise((r) => setTimeout(r, KEEP_WARM_MS + 500));
    cold.push(await stageOverSocket(makeTarball(tiny)));
  }
  const fixed: Series = series(warm);
  printRow(args, {
    row: '1 fixed',
    what: `stage a release of ${tiny.files} small files over admin.sock (no agentctl): the fixed cost of a stage`,
    unit: 'ms',
    steward: fixed,
    target: '< 50 ms',
    met: fixed.median < 50,
    extra: {
      coldMs: cold.length > 0 ? median(cold) : 'not measured (--quick)',
      viaAgentctlMs: median(viaAgentctl),
      sameWorkPeerMs: median(peer),
    },
    notes: `warm: right after another stage; coldMs: after ${KEEP_WARM_MS} ms idle, when the extraction worker has ended; viaAgentctlMs adds agentctl's start (row 6)`,
  });
} finally {
  await helper.stop();
  host.cleanup();
}
