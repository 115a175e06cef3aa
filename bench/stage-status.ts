import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { callHelper } from '../src/protocol/client.js';
import { BIN, makeHost, processApp } from '../test/helpers/host.js';
import { benchArgs, printRow, series, startInstalledHelper } from './lib.js';
import { makeAppTree, tarballOf } from './stage-input.js';

// Row 2: how long the helper takes to answer `status` over admin.sock while it stages a
// release (the extraction runs in a worker thread; the event loop must stay free). One
// status request at a time, back to back, for the whole stage; the worst answer is the figure.

const args = benchArgs(3, 1);
const host = makeHost({ apps: { web: processApp({ keepReleases: 2 }) } });
const helper = await startInstalledHelper(host);
try {
  const tree = makeAppTree(path.join(host.scratch, 'tree'), args.quick);
  const worst: number[] = [];
  const all: number[] = [];
  let id = 1;
  // Idle answers first: what a status costs when nothing else runs, to compare.
  const idle: number[] = [];
  for (let i = 0; i < 50; i++) {
    const t = process.hrtime.bigint();
    await callHelper(host.paths.adminSock, { v: 1, id: id++, op: 'status' });
    idle.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  for (let i = 0; i < args.runs; i++) {
    const version = `1.0.${i}`;
    const tgz = path.join(host.scratch, `web-${version}.tgz`);
    tarballOf(tree, 'web', version, tgz);
    const integrity = 'sha512-' + createHash('sha512').update(readFileSync(tgz)).digest('base64');
    const child = spawn(process.execPath, [BIN.agentctl, '--root', host.root, 'stage', 'web', version, '--file', tgz, '--integrity', integrity, '--allow-unsigned', '--json'], { stdio: 'ignore' });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    let done = false;
    void exited.then(() => (done = true));
    const times: number[] = [];
    while (!done) {
      const t = process.hrtime.bigint();
      await callHelper(host.paths.adminSock, { v: 1, id: id++, op: 'status' });
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    const code = await exited;
    if (code !== 0) throw new Error(`agentctl stage exited ${code}`);
    worst.push(Math.max(...times));
    all.push(...times);
    rmSync(tgz);
    rmSync(path.join(host.paths.appsDir, 'web/versions', version), { recursive: true, force: true });
  }
  const w = series(worst);
  const a = series(all);
  printRow(args, {
    row: 2,
    what: 'worst `status` answer over admin.sock while the helper stages (per stage)',
    unit: 'ms',
    steward: w,
    target: 'max < 50 ms',
    met: w.max < 50,
    extra: { statusAnswers: a.n, p99AllAnswers: a.p99, medianAllAnswers: a.median, idleMedian: series(idle).median, idleMax: series(idle).max },
  });
} finally {
  await helper.stop();
  host.cleanup();
}
