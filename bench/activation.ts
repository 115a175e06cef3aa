import { randomBytes } from 'node:crypto';
import { closeSync, constants as fsc, fsync, fsyncSync, mkdirSync, openSync, renameSync, statSync, symlinkSync, writeSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { journalFile, receiptsFile, stateFile, supervisorFile } from '../src/core/paths.js';
import { activate } from '../src/helper/update/activate.js';
import { makeFaultHost } from '../test/helpers/fault-host.js';
import { benchArgs, ms, printRow, ratios, series } from './lib.js';

// Row 3: the activation's own overhead (journal, swap, state, receipt, with their fsyncs, and
// the reads and checks around them) without the app's start and probe: `activate()` runs in
// this process on a `unit` app whose unit is a fake that starts at once (test/helpers/
// fault-host.ts) and a probe that passes at once, so the time measured is steward's alone.
// The peer is the floor: a script doing only the syscalls docs/design.md §2 requires for the same
// writes, with the same sizes, on the same file system: atomic replace (open O_EXCL, write,
// fsync, close, rename, fsync folder) of the journal (activating), the symlink swap (symlink,
// rename, fsync folder), the supervisor record naming the new process (docs/design.md §5: a record
// that says `expected: running` names the one live process, or a helper restart would start
// a second one), the state, the journal (active), the receipt sequence and the receipts:
// 13 fsyncs, with synchronous calls and nothing else. `extra` also gives the same work with
// steward's own 15 fsyncs (its `stopped` supervisor record, written before the old process is
// signalled, docs/design.md §5 at every instant): what "the same fsyncs" done one after the other cost;
// and those 15 again with each fsync through libuv's thread pool, as steward makes them so that
// its event loop never waits for the disk (one after the other; steward overlaps two pairs):
// what is left above that is steward's own work on the main thread.

const args = benchArgs(30, 5);
const fsyncInPool = promisify(fsync);
const fh = await makeFaultHost();
try {
  const ctx = { ...fh.context(), probe: async () => ({ ok: true as const }) };
  await fh.stage(ctx, '1.0.0');
  await fh.stage(ctx, '2.0.0');
  const floor = path.join(fh.host.scratch, 'floor');
  mkdirSync(path.join(floor, 'journal'), { recursive: true });
  mkdirSync(path.join(floor, 'state'), { recursive: true });
  mkdirSync(path.join(floor, 'supervisor'), { recursive: true });
  mkdirSync(path.join(floor, 'receipts'), { recursive: true });
  mkdirSync(path.join(floor, 'app/versions/1.0.0'), { recursive: true });
  mkdirSync(path.join(floor, 'app/versions/2.0.0'), { recursive: true });

  let current: string | null = null;
  const activation = async (n: number) => {
    const target = current === '1.0.0' ? '2.0.0' : '1.0.0';
    const t = process.hrtime.bigint();
    const r = await activate(ctx, { app: 'web', attemptId: `bench-${n}`, fromVersion: current, targetVersion: target, startedAt: Date.now(), progress: () => {} });
    const took = ms(t);
    if (r.journal.outcome !== 'active') throw new Error(`activation ${n} ended ${r.journal.outcome}`);
    current = target;
    return took;
  };
  const sizeOf = (f: string) => statSync(f).size;
  // The same bytes as steward's files of the last activation.
  const sizesNow = () => ({
    journal: sizeOf(journalFile(fh.paths, 'web')),
    state: sizeOf(stateFile(fh.paths, 'web')),
    supervisor: sizeOf(supervisorFile(fh.paths, 'web')),
    seq: sizeOf(fh.paths.receiptSeq),
    receipts: sizeOf(receiptsFile(fh.paths, 'web')),
  });
  // The files the peer writes, in order: [file under floor/, its size] or the swap.
  const steps = (withRecord: boolean, withStopped: boolean) => {
    const z = sizesNow();
    const to = current === '1.0.0' ? 'versions/2.0.0' : 'versions/1.0.0';
    return [
      ['journal/web.json', z.journal],
      ...(withStopped ? [['supervisor/web.json', z.supervisor]] : []),
      ['swap', to],
      ...(withRecord ? [['supervisor/web.json', z.supervisor]] : []),
      ['state/web.json', z.state],
      ['journal/web.json', z.journal],
      ['state/receipt-seq.json', z.seq],
      ['receipts/web.json', z.receipts],
    ] as [string, number | string][];
  };
  // withRecord false: the peer of earlier rounds (11 fsyncs), kept as an extra figure;
  // withStopped: steward's own 15 (the `stopped` record before the swap).
  const peer = (withRecord = true, withStopped = false) => {
    const todo = steps(withRecord, withStopped);
    const t = process.hrtime.bigint();
    for (const [f, x] of todo) {
      if (f === 'swap') swap(path.join(floor, 'app'), x as string);
      else replace(path.join(floor, f), x as number);
    }
    return ms(t);
  };
  // Steward's 15 fsyncs as steward makes them, each through libuv's thread pool (the event
  // loop never waits for the disk), and nothing else: the floor of that design.
  const peerAsync = async () => {
    const todo = steps(true, true);
    const t = process.hrtime.bigint();
    for (const [f, x] of todo) {
      if (f === 'swap') await swapAsync(path.join(floor, 'app'), x as string);
      else await replaceAsync(path.join(floor, f), x as number);
    }
    return ms(t);
  };

  // Warm-up: fill the receipts file to its steady size (64 kept) and the caches.
  for (let i = 0; i < (args.quick ? 3 : 70); i++) await activation(-i - 1);
  const steward: number[] = [];
  const floorTimes: number[] = [];
  const floorWithoutRecord: number[] = [];
  const floorSameFsyncs: number[] = [];
  const floorAsync: number[] = [];
  for (let i = 0; i < args.runs; i++) {
    steward.push(await activation(i));
    floorTimes.push(peer());
    floorWithoutRecord.push(peer(false));
    floorSameFsyncs.push(peer(true, true));
    floorAsync.push(await peerAsync());
  }
  const ratio = series(ratios(steward, floorTimes));
  const s = series(steward);
  printRow(args, {
    row: 3,
    what: 'activation overhead (journal, swap, state, receipt, fsyncs; no start, no probe)',
    unit: 'ms',
    steward: s,
    peer: series(floorTimes),
    peerWhat: 'the durability recipes\' syscalls only (atomic replace, symlink swap)',
    ratio,
    target: 'ratio <= 1.3 (issue 21)',
    met: ratio.median <= 1.3,
    extra: {
      receiptsFileBytes: sizeOf(receiptsFile(fh.paths, 'web')),
      peerWithoutSupervisorRecordMs: series(floorWithoutRecord).median,
      ratioToPeerWithoutRecord: series(ratios(steward, floorWithoutRecord)).median,
      peerSameFsyncsMs: series(floorSameFsyncs).median,
      ratioToSameFsyncs: series(ratios(steward, floorSameFsyncs)).median,
      peerSameFsyncsInPoolMs: series(floorAsync).median,
      ratioToSameFsyncsInPool: series(ratios(steward, floorAsync)).median,
    },
  });
} finally {
  fh.cleanup();
}

// Atomic file replace (docs/design.md §2) of `bytes` random bytes.
function replace(target: string, bytes: number): void {
  const dir = path.dirname(target);
  const tmp = path.join(dir, `.${path.basename(target)}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(tmp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600);
  writeSync(fd, randomBytes(bytes));
  fsyncSync(fd);
  closeSync(fd);
  renameSync(tmp, target);
  fsyncDir(dir);
}

// replace() and swap() with each fsync through the thread pool, as steward's fs-atomic.ts.
async function replaceAsync(target: string, bytes: number): Promise<void> {
  const dir = path.dirname(target);
  const tmp = path.join(dir, `.${path.basename(target)}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(tmp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600);
  writeSync(fd, randomBytes(bytes));
  await fsyncInPool(fd);
  closeSync(fd);
  renameSync(tmp, target);
  await fsyncDirAsync(dir);
}

async function swapAsync(dir: string, target: string): Promise<void> {
  const tmp = path.join(dir, `.current.${randomBytes(6).toString('hex')}`);
  symlinkSync(target, tmp);
  renameSync(tmp, path.join(dir, 'current'));
  await fsyncDirAsync(dir);
}

async function fsyncDirAsync(dir: string): Promise<void> {
  const fd = openSync(dir, fsc.O_RDONLY | fsc.O_DIRECTORY);
  await fsyncInPool(fd);
  closeSync(fd);
}

// Atomic symlink swap (docs/design.md §2).
function swap(dir: string, target: string): void {
  const tmp = path.join(dir, `.current.${randomBytes(6).toString('hex')}`);
  symlinkSync(target, tmp);
  renameSync(tmp, path.join(dir, 'current'));
  fsyncDir(dir);
}

function fsyncDir(dir: string): void {
  const fd = openSync(dir, fsc.O_RDONLY | fsc.O_DIRECTORY);
  fsyncSync(fd);
  closeSync(fd);
}

