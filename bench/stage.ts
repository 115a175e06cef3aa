import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { appDir } from '../src/core/paths.js';
import { BIN, makeHost, processApp } from '../test/helpers/host.js';
import { benchArgs, cpuMsOf, haveCommand, ms, printRow, ratios, series, startInstalledHelper } from './lib.js';
import { makeAppTree, tarballOf } from './stage-input.js';

// Row 1: `agentctl stage` of a local tarball through a real helper (on a temp --root) against
// what a shell script would do with the same tarball: sha512sum, GNU tar xzf, sync -f.
// The two run in turn, A B A B, each on a fresh tarball; the ratio is taken pair by pair.
// Trees are removed only after the last run: on an ext4 without a journal (this VM's) the
// inode allocator skips every inode freed in the last 60-360 s one by one, so deleting the
// last run's 11,000 inodes made the next run's file creations pay for them (perf of an
// extraction right after such a delete: 45% of its samples in ext4's recently_deleted),
// by an amount that depends on which block group each side's folder lands in.

const args = benchArgs(5, 1);
for (const cmd of ['tar', 'sha512sum', 'sync']) if (!haveCommand(cmd)) throw new Error(`bench/stage needs ${cmd} on PATH`);

const host = makeHost({ apps: { web: processApp({ keepReleases: 2 }) } });
const helper = await startInstalledHelper(host);
try {
  const tree = makeAppTree(path.join(host.scratch, 'tree'), args.quick);
  const steward: number[] = [];
  const peer: number[] = [];
  // CPU time beside wall time: on this VM's disk the wall time of both sides moves with the file
  // system's state (see above), their CPU time much less.
  const stewardCpu: number[] = [];
  const peerCpu: number[] = [];
  const helperPid = helper.child.pid as number;
  let size = 0;
  for (let i = 0; i <= args.runs; i++) {
    // Run 0 is a warm-up, not counted.
    const version = `1.0.${i}`;
    const tgz = path.join(host.scratch, `web-${version}.tgz`);
    tarballOf(tree, 'web', version, tgz);
    size = statSync(tgz).size;
    const integrity = 'sha512-' + createHash('sha512').update(readFileSync(tgz)).digest('base64');
    execFileSync('sync');

    let cpu = cpuMsOf('self', true) + cpuMsOf(helperPid);
    let t = process.hrtime.bigint();
    const r = spawnSync(process.execPath, [BIN.agentctl, '--root', host.root, 'stage', 'web', version, '--file', tgz, '--integrity', integrity, '--allow-unsigned', '--json'], { encoding: 'utf8' });
    const a = ms(t);
    const aCpu = cpuMsOf('self', true) + cpuMsOf(helperPid) - cpu;
    if (r.status !== 0) throw new Error(`agentctl stage exited ${r.status}: ${r.stderr}${r.stdout}`);

    // Beside steward's own staging folder (<app>/.staging/<attempt>), so that both sides' inodes
    // are allocated near the same parent folder (ext4 places a new folder's inodes by its parent).
    const peerBase = path.join(appDir(host.paths, 'web'), '.peer');
    mkdirSync(peerBase, { recursive: true });
    const dest = path.join(peerBase, version);
    mkdirSync(dest);
    cpu = cpuMsOf('self', true);
    t = process.hrtime.bigint();
    const p = spawnSync('sh', ['-c', 'sha512sum "$1" >/dev/null && tar -xzf "$1" -C "$2" && sync -f "$2"', 'sh', tgz, dest]);
    const b = ms(t);
    const bCpu = cpuMsOf('self', true) - cpu;
    if (p.status !== 0) throw new Error(`the peer script exited ${p.status}: ${p.stderr}`);
    rmSync(tgz);
    if (i > 0) {
      steward.push(a);
      peer.push(b);
      stewardCpu.push(aCpu);
      peerCpu.push(bCpu);
    }
  }
  const ratio = series(ratios(steward, peer));
  printRow(args, {
    row: 1,
    what: `stage a ${(size / 1e6).toFixed(1)} MB tarball of ${tree.files} files from a local file`,
    unit: 'ms',
    steward: series(steward),
    peer: series(peer),
    peerWhat: 'sha512sum + tar xzf + sync -f',
    ratio,
    target: 'ratio <= 1.5',
    met: ratio.median <= 1.5,
    extra: {
      tarballBytes: size,
      files: tree.files,
      cpuMsSteward: series(stewardCpu).median,
      cpuMsPeer: series(peerCpu).median,
      cpuRatio: series(ratios(stewardCpu, peerCpu)).median,
    },
  });
} finally {
  await helper.stop();
  host.cleanup();
}
