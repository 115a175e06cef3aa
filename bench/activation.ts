import { randomBytes } from 'node:crypto';
import { closeSync, constants as fsc, fsyncSync, mkdirSync, openSync, renameSync, statSync, symlinkSync, writeSync } from 'node:fs';
import path from 'node:path';
import { journalFile, receiptsFile, stateFile, supervisorFile } from '../src/core/paths.js';
import { activate } from '../src/helper/update/activate.js';
import { makeFaultHost } from '../test/helpers/fault-host.js';
import { benchArgs, ms, printRow, ratios, series } from './lib.js';

// Row 3: the activation's own overhead (journal, swap, state, receipt, with their fsyncs, and
// the reads and checks around them) without the app's start and probe: `activate()` runs in
// this process on a `unit` app whose unit is a fake that starts at once (test/helpers/
// fault-host.ts) and a probe that passes at once, so the time measured is steward's alone.
// The peer is the floor: a script doing only the syscalls DESIGN §2 requires for the same
// writes, with the same sizes, on the same file system: atomic replace (open O_EXCL, write,
// fsync, close, rename, fsync folder) of the journal (activating), the symlink swap (symlink,
// rename, fsync folder), the supervisor record naming the new process (DESIGN §5: a record
// that says `expected: running` names the one live process, or a helper restart would start
// a second one), the state, the journal (active), the receipt sequence and the receipts:
// 13 fsyncs, with synchronous calls and nothing else. `extra` also gives the same work with
// steward's own 15 fsyncs (its `stopped` supervisor record, written before the old process is
// signalled, DESIGN §5 at every instant): what "the same fsyncs" done one after the other cost.

const args = benchArgs(30, 5);
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
  // withRecord false: the peer of earlier rounds (11 fsyncs), kept as an extra figure;
  // withStopped: steward's own 15 (the `stopped` record before the swap).
  const peer = (withRecord = true, withStopped = false) => {
    // The same bytes as steward's files of the last activation.
    const sizes = {
      journal: sizeOf(journalFile(fh.paths, 'web')),
      state: sizeOf(stateFile(fh.paths, 'web')),
      supervisor: sizeOf(supervisorFile(fh.paths, 'web')),
      seq: sizeOf(fh.paths.receiptSeq),
      receipts: sizeOf(receiptsFile(fh.paths, 'web')),
    };
    const t = process.hrtime.bigint();
    replace(path.join(floor, 'journal/web.json'), sizes.journal);
    if (withStopped) replace(path.join(floor, 'supervisor/web.json'), sizes.supervisor);
    swap(path.join(floor, 'app'), current === '1.0.0' ? 'versions/2.0.0' : 'versions/1.0.0');
    if (withRecord) replace(path.join(floor, 'supervisor/web.json'), sizes.supervisor);
    replace(path.join(floor, 'state/web.json'), sizes.state);
    replace(path.join(floor, 'journal/web.json'), sizes.journal);
    replace(path.join(floor, 'state/receipt-seq.json'), sizes.seq);
    replace(path.join(floor, 'receipts/web.json'), sizes.receipts);
    return ms(t);
  };

  // Warm-up: fill the receipts file to its steady size (64 kept) and the caches.
  for (let i = 0; i < (args.quick ? 3 : 70); i++) await activation(-i - 1);
  const steward: number[] = [];
  const floorTimes: number[] = [];
  const floorWithoutRecord: number[] = [];
  const floorSameFsyncs: number[] = [];
  for (let i = 0; i < args.runs; i++) {
    steward.push(await activation(i));
    floorTimes.push(peer());
    floorWithoutRecord.push(peer(false));
    floorSameFsyncs.push(peer(true, true));
  }
  const ratio = series(ratios(steward, floorTimes));
  const s = series(steward);
  printRow(args, {
    row: 3,
    what: 'activation overhead (journal, swap, state, receipt, fsyncs; no start, no probe)',
    unit: 'ms',
    steward: s,
    peer: series(floorTimes),
    peerWhat: 'the DESIGN §2 syscalls only',
    ratio,
    target: 'ratio <= 1.3 (issue 21)',
    met: ratio.median <= 1.3,
    extra: {
      receiptsFileBytes: sizeOf(receiptsFile(fh.paths, 'web')),
      peerWithoutSupervisorRecordMs: series(floorWithoutRecord).median,
      ratioToPeerWithoutRecord: series(ratios(steward, floorWithoutRecord)).median,
      peerSameFsyncsMs: series(floorSameFsyncs).median,
      ratioToSameFsyncs: series(ratios(steward, floorSameFsyncs)).median,
    },
  });
} finally {
  fh.cleanup();
}

// Atomic file replace (DESIGN §2) of `bytes` random bytes.
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

// Atomic symlink swap (DESIGN §2).
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

