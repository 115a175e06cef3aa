// The crash-state explorer (issue 7, items 1-3): runs real steward code under strace on a temp
// root, turns the trace into file-system operations, generates the states a power cut could
// leave (crash-states.ts), writes each distinct one out as a root, runs a check on it (the
// helper's start and the invariants, or the agent's outbox) and reports what broke.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { promises as fsp, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { processesUnder } from '../helpers/app-processes.js';
import { mulberry32 } from '../helpers/prng.js';
import { generateCrashStates, type CrashState } from './crash-states.js';
import { FsModel, loadTree, writeTree, type FsOp } from './fs-model.js';
import { parseStrace } from './strace-parse.js';
import { TRACED_SYSCALLS, traceToOps } from './trace-to-ops.js';

// run/ is a tmpfs (nothing in it survives a power cut); var/log/ holds app output, which no
// invariant is about and which the apps write all the time.
export const SKIP = (rel: string) => rel === 'run' || rel.startsWith('run/') || rel === 'var/log' || rel.startsWith('var/log/');

// Starts `argv` under `strace -f`, writing the trace to `traceFile`.
export function spawnTraced(argv: string[], traceFile: string, env: NodeJS.ProcessEnv = process.env): ChildProcess {
  const flags = ['-f', '-y', '-qq', '--seccomp-bpf', '-s', '4194304', '-o', traceFile, '-e', `trace=${TRACED_SYSCALLS.join(',')}`];
  // UV_USE_IO_URING=0: libuv may submit file operations through io_uring, which strace cannot see.
  return spawn('strace', [...flags, ...argv], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...env, UV_USE_IO_URING: '0' } });
}

// The pid of the program strace started (its first child).
export async function tracedPid(strace: ChildProcess): Promise<number> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const kids = await fsp.readFile(`/proc/${strace.pid}/task/${strace.pid}/children`, 'utf8').catch(() => '');
    const pid = Number(kids.trim().split(/\s+/)[0]);
    if (pid > 0) return pid;
    if (Date.now() > deadline) throw new Error('strace started nothing');
    await new Promise((r) => setTimeout(r, 20));
  }
}

// SIGKILLs every process running inside `dir`.
export async function killProcessesUnder(dir: string): Promise<void> {
  for (const pid of await processesUnder(dir)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}

// Waits for a traced run to end (strace exits when its last tracee does).
export async function waitExit(child: ChildProcess, ms = 30_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const t = setTimeout(() => child.kill('SIGKILL'), ms);
  await once(child, 'exit');
  clearTimeout(t);
}

export interface Recorded {
  snapshot: FsModel;
  ops: FsOp[];
  traceLines: number;
}

// Reads the trace of a run on `root` into operations, against the snapshot taken before it.
export function recordOps(traceFile: string, root: string, snapshot: FsModel): Recorded {
  const text = readFileSync(traceFile, 'utf8');
  const events = parseStrace(text);
  const ops = traceToOps(events, snapshot, { root, skip: SKIP });
  // A run that wrote durably but shows no fsync was not seen whole (io_uring, a filtered call).
  if (!ops.some((o) => o.k === 'fsync')) throw new Error(`the trace ${traceFile} shows no fsync on ${root}: the run was not traced whole`);
  return { snapshot, ops, traceLines: text.split('\n').length };
}

// The model of a crash state: the snapshot with the operations that survived replayed in order.
export function materialize(snapshot: FsModel, ops: readonly FsOp[], s: CrashState): FsModel {
  const m = snapshot.clone();
  const lost = new Set(s.lost);
  for (let i = 0; i < s.crashAt; i++) if (!lost.has(i)) m.apply(ops[i] as FsOp);
  return m;
}

// How a state came to be, for a violation: the cut, the last operations before it, what was lost.
export function describeState(ops: readonly FsOp[], s: CrashState): string {
  const show = (i: number) => `    #${i} ${ops[i]!.k} ${ops[i]!.path} (trace line ${ops[i]!.line})`;
  const last = [];
  for (let i = Math.max(0, s.crashAt - 4); i < s.crashAt; i++) last.push(show(i));
  return [
    `  power cut after operation #${s.crashAt - 1} of ${ops.length} (${s.kind}); the last ones issued:`,
    ...last,
    s.lost.length ? `  lost (never reached the disk):` : '  nothing lost: a clean prefix',
    ...s.lost.slice(0, 12).map(show),
    ...(s.lost.length > 12 ? [`    ... and ${s.lost.length - 12} more`] : []),
  ].join('\n');
}

export interface Exploration {
  scenario: string;
  ops: number;
  enumerated: number;
  kinds: Record<CrashState['kind'], number>;
  made: number;
  distinct: number;
  checked: number;
  violations: { state: CrashState; problems: string[]; how: string }[];
}

let rootSerial = 0;

// Generates the crash states of `ops`, writes each distinct one out under `workDir` and runs
// `check` on it (which returns the violated invariants). Prints the counts.
export async function explore(
  scenario: string,
  rec: { snapshot: FsModel; ops: FsOp[] },
  workDir: string,
  check: (root: string) => Promise<string[]>,
  // `states`: check exactly these (a re-check of earlier findings) instead of generating them.
  // `enough`: stop starting states once this many violate (a mutation test needs only to meet
  // the violations it looks for); the states already started are finished.
  opts: { cap: number; seed: number; concurrency?: number; states?: CrashState[]; enough?: number },
): Promise<Exploration> {
  if (process.env.STEWARD_CRASH_OPS) {
    console.log(`operations of [${scenario}]:\n${rec.ops.map((o, i) => `  #${i} ${o.k} ${o.path}`).join('\n')}`);
  }
  const gen = opts.states
    ? { states: opts.states, enumerated: opts.states.length, kinds: { prefix: 0, 'drop-one': 0, 'drop-many': 0 } }
    : generateCrashStates(rec.ops, { cap: opts.cap, seed: opts.seed, rng: mulberry32(opts.seed) });
  const byDigest = new Map<string, { state: CrashState; model: FsModel }>();
  for (const s of gen.states) {
    const model = materialize(rec.snapshot, rec.ops, s);
    const d = model.digest();
    if (!byDigest.has(d)) byDigest.set(d, { state: s, model });
  }
  const result: Exploration = { scenario, ops: rec.ops.length, enumerated: gen.enumerated, kinds: gen.kinds, made: gen.states.length, distinct: byDigest.size, checked: 0, violations: [] };
  await fsp.mkdir(workDir, { recursive: true, mode: 0o755 });
  const queue = [...byDigest.values()];
  const ms = { write: 0, check: 0, clean: 0 };
  const started = Date.now();
  const worker = async () => {
    for (;;) {
      if (opts.enough !== undefined && result.violations.length >= opts.enough) return;
      const item = queue.shift();
      if (!item) return;
      // Unique across the explorations of one work folder: a root's path names its app cgroups
      // (app-cgroup.ts), which a state checked earlier must not share with this one.
      const root = path.join(workDir, `s${rootSerial++}`);
      let t = Date.now();
      await writeTree(item.model, root);
      ms.write += Date.now() - t;
      t = Date.now();
      let problems: string[];
      try {
        problems = await check(root);
      } catch (err) {
        problems = [`the check threw: ${(err as Error).stack ?? err}`];
      }
      ms.check += Date.now() - t;
      t = Date.now();
      result.checked++;
      if (problems.length) result.violations.push({ state: item.state, problems, how: describeState(rec.ops, item.state) });
      rmSync(root, { recursive: true, force: true });
      ms.clean += Date.now() - t;
    }
  };
  try {
    await Promise.all(Array.from({ length: opts.concurrency ?? 3 }, worker));
  } finally {
    // Whatever a start left running that its run record did not name.
    await killProcessesUnder(workDir);
  }
  console.log(
    `crash explorer [${scenario}]: ${result.ops} file-system operations traced; ` +
      (opts.states
        ? `${opts.states.length} crash states given (a re-check), `
        : `${result.enumerated} distinct crash states enumerated ` +
          `(${gen.kinds.prefix} prefixes and ${gen.kinds['drop-one']} single losses, all of them; ${gen.kinds['drop-many']} multi-loss drawn), `) +
      `${result.made} made (cap ${opts.cap}, seed ${opts.seed}), ${result.distinct} distinct on disk, ${result.checked} checked, ` +
      `${result.violations.length} violating${result.checked < result.distinct ? ` (stopped at ${opts.enough} violating)` : ''}; ${((Date.now() - started) / 1000).toFixed(1)} s ` +
      `(summed over workers: write ${ms.write} ms, start+check ${ms.check} ms, clean ${ms.clean} ms)`,
  );
  return result;
}

// A readable report of the first few violations.
export function formatViolations(x: Exploration, max = 3): string {
  return x.violations
    .slice(0, max)
    .map((v, i) => `violation ${i + 1} of ${x.violations.length} [${x.scenario}]:\n  ${v.problems.join('\n  ')}\n${v.how}`)
    .join('\n\n');
}

// A folder for the crash states' roots: on /dev/shm when there is one, because the helper's
// start fsyncs a dozen times per state and what is checked is the content, not the disk's speed;
// the caller removes it.
export async function stateWorkDir(fallback: string): Promise<string> {
  const shm = await fsp.stat('/dev/shm').catch(() => null);
  const base = shm?.isDirectory() ? '/dev/shm' : fallback;
  const dir = await fsp.mkdtemp(path.join(base, 'steward-crash-'));
  await fsp.chmod(dir, 0o755);
  return dir;
}

// Loads the root before a traced run (run/ left out: a tmpfs).
export function snapshotRoot(root: string): Promise<FsModel> {
  return loadTree(root, (rel) => rel === 'run' || rel.startsWith('run/'));
}
