import { spawnSync } from 'node:child_process';
import { BIN, makeHost, processApp } from '../test/helpers/host.js';
import { benchArgs, ms, printRow, ratios, series, startInstalledHelper } from './lib.js';

// Row 6: the wall time of `agentctl status --json` (a whole process: node's start, the CLI's
// imports, one request to a real helper, the answer printed) against `node -e 0`, the floor
// any node CLI pays (issue 16's target: 1.3 times; issue 8's was 2). The two run in turn,
// A B A B, after a warm-up; the ratio is pair by pair.

const args = benchArgs(10, 3);
const host = makeHost({ apps: { web: processApp(), api: processApp() } });
const helper = await startInstalledHelper(host);
try {
  const steward: number[] = [];
  const peer: number[] = [];
  for (let i = 0; i <= args.runs; i++) {
    let t = process.hrtime.bigint();
    const r = spawnSync(process.execPath, [BIN.agentctl, '--root', host.root, 'status', '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const a = ms(t);
    if (r.status !== 0) throw new Error(`agentctl status exited ${r.status}: ${r.stderr}`);
    t = process.hrtime.bigint();
    spawnSync(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    const b = ms(t);
    if (i > 0) {
      steward.push(a);
      peer.push(b);
    }
  }
  const ratio = series(ratios(steward, peer));
  printRow(args, {
    row: 6,
    what: '`agentctl status --json` wall time',
    unit: 'ms',
    steward: series(steward),
    peer: series(peer),
    peerWhat: 'node -e 0',
    ratio,
    target: 'ratio <= 1.3',
    met: ratio.median <= 1.3,
  });
} finally {
  await helper.stop();
  host.cleanup();
}
