// The states a power cut can leave after a traced run, from its ordered file-system operations.
// Pure and seeded.
//
// The persistence model (weaker than ext4 data=ordered, so it holds every state ext4 can leave
// and more; close to the "POSIX minimum" ALICE and CrashMonkey assume):
// - A power cut after operation k keeps a subset of operations 0..k-1. An operation made
//   durable by a sync before the cut is always kept; any other may be lost.
// - `syncfs` makes everything before it durable. `fsync(X)` makes durable the data, size,
//   mode and owner changes of inode X before it and, when X is a folder, the entries created,
//   removed or renamed in X before it (a rename, atomic, once either of its folders is fsynced).
//   fsync of a file does NOT make its own name durable.
// - Writes are lost whole (a lost write leaves zeros where it was if a later write survived), so
//   a file's data may be missing while its rename survived.
// - What a kept operation needs is kept too: an entry's folder, the previous
//   operation on the same entry name (operations on one name persist in order), and the emptying
//   of a removed folder. Dropping an operation drops everything that needs it.
import type { FsOp } from './fs-model.js';

export interface CrashState {
  // Operations 0..crashAt-1 were issued before the cut.
  crashAt: number;
  // Those of them that did not survive, ascending.
  lost: number[];
  kind: 'prefix' | 'drop-one' | 'drop-many';
}

export interface OpGraph {
  // deps[j]: earlier operations j needs; dependents[i]: later ones that need i.
  deps: number[][];
  dependents: number[][];
  // The index of the first sync that makes operation i durable, or Infinity.
  durableAt: number[];
}

const isSync = (op: FsOp) => op.k === 'fsync' || op.k === 'syncfs';

// The dependencies and the durability of every operation.
export function analyzeOps(ops: readonly FsOp[]): OpGraph {
  const deps: number[][] = ops.map(() => []);
  const creator = new Map<number, number>();
  const lastOnName = new Map<string, number>();
  const entryOpsIn = new Map<number, number[]>();
  const add = (j: number, i: number | undefined) => {
    if (i !== undefined && i !== j && !deps[j]!.includes(i)) deps[j]!.push(i);
  };
  ops.forEach((op, j) => {
    if (op.k === 'syncfs') return;
    const names: string[] = [];
    const parents: number[] = [];
    if ('parent' in op) {
      names.push(`${op.parent}/${op.name}`);
      parents.push(op.parent);
    }
    if (op.k === 'rename') {
      names.push(`${op.toParent}/${op.toName}`);
      parents.push(op.toParent);
    }
    for (const n of names) {
      add(j, lastOnName.get(n));
      lastOnName.set(n, j);
    }
    for (const p of parents) {
      add(j, creator.get(p));
      entryOpsIn.set(p, [...(entryOpsIn.get(p) ?? []), j]);
    }
    if (op.k === 'creat' || op.k === 'mkdir' || op.k === 'symlink') creator.set(op.ino, j);
    // A write, chmod or fsync needs the inode, not its name: when the creation's entry is
    // lost they land on an inode no name reaches (the model keeps it as an orphan).
    else if (op.k === 'link') add(j, creator.get(op.ino));
    if (op.k === 'rmdir') for (const i of entryOpsIn.get(op.ino) ?? []) add(j, i);
  });
  const dependents: number[][] = ops.map(() => []);
  deps.forEach((ds, j) => ds.forEach((i) => dependents[i]!.push(j)));

  const durableAt = ops.map(() => Infinity);
  ops.forEach((s, si) => {
    if (!isSync(s)) return;
    for (let i = 0; i < si; i++) {
      if (durableAt[i] !== Infinity || isSync(ops[i] as FsOp)) continue;
      if (s.k === 'syncfs' || covers(s.ino, ops[i] as FsOp)) durableAt[i] = si;
    }
  });
  return { deps, dependents, durableAt };
}

// Whether fsync of inode `x` makes `op` durable.
function covers(x: number, op: FsOp): boolean {
  switch (op.k) {
    case 'write':
    case 'trunc':
    case 'chmod':
    case 'chown':
      return op.ino === x;
    case 'rename':
      return op.parent === x || op.toParent === x;
    case 'creat':
    case 'mkdir':
    case 'symlink':
    case 'link':
    case 'unlink':
    case 'rmdir':
      return op.parent === x;
    default:
      return false;
  }
}

// The operations that may be lost in a cut after operation crashAt-1: not durable, and
// nothing durable needs them.
export function droppable(ops: readonly FsOp[], g: OpGraph, crashAt: number): number[] {
  const blocked = new Array<boolean>(crashAt).fill(false);
  const out: number[] = [];
  for (let i = crashAt - 1; i >= 0; i--) {
    blocked[i] = g.durableAt[i]! < crashAt || g.dependents[i]!.some((j) => j < crashAt && blocked[j]);
    if (!blocked[i] && !isSync(ops[i] as FsOp)) out.push(i);
  }
  return out.reverse();
}

// `i` and every operation before crashAt that needs it, transitively.
export function closure(g: OpGraph, crashAt: number, seeds: Iterable<number>): number[] {
  const seen = new Set<number>();
  const stack = [...seeds];
  while (stack.length) {
    const i = stack.pop() as number;
    if (seen.has(i) || i >= crashAt) continue;
    seen.add(i);
    for (const j of g.dependents[i] ?? []) stack.push(j);
  }
  return [...seen].sort((a, b) => a - b);
}

// The operations a state keeps that change the disk, as a key: two states with the same key
// are the same disk.
export function stateKey(ops: readonly FsOp[], s: CrashState): string {
  const lost = new Set(s.lost);
  const kept: number[] = [];
  for (let i = 0; i < s.crashAt; i++) if (!lost.has(i) && !isSync(ops[i] as FsOp)) kept.push(i);
  return kept.join(',');
}

export interface Generated {
  states: CrashState[];
  // Distinct states enumerated: every prefix and every single loss (exhaustively), plus the
  // random multi-loss states drawn; `states` is a seeded sample of at most `cap` of them.
  enumerated: number;
  // How many of each kind were enumerated.
  kinds: Record<CrashState['kind'], number>;
}

// Every prefix, every single loss (with what needs it) at every cut, and random multi-loss
// states; more than `cap` are sampled with `seed`.
export function generateCrashStates(ops: readonly FsOp[], opts: { cap: number; seed: number; rng: () => number }): Generated {
  const g = analyzeOps(ops);
  const seen = new Set<string>();
  const pools: Record<CrashState['kind'], CrashState[]> = { prefix: [], 'drop-one': [], 'drop-many': [] };
  const offer = (s: CrashState) => {
    const key = stateKey(ops, s);
    if (seen.has(key)) return false;
    seen.add(key);
    pools[s.kind].push(s);
    return true;
  };
  const windows: { crashAt: number; d: number[] }[] = [];
  for (let k = 0; k <= ops.length; k++) {
    offer({ crashAt: k, lost: [], kind: 'prefix' });
    const d = droppable(ops, g, k);
    if (d.length > 1) windows.push({ crashAt: k, d });
    for (const i of d) offer({ crashAt: k, lost: closure(g, k, [i]), kind: 'drop-one' });
  }
  // Random subsets of a window: each droppable operation lost with a probability drawn per state.
  const { rng } = opts;
  for (let tries = 0; windows.length && tries < opts.cap * 4 && pools['drop-many'].length < opts.cap; tries++) {
    const w = windows[Math.floor(rng() * windows.length)] as (typeof windows)[number];
    const p = 0.2 + rng() * 0.6;
    const seeds = w.d.filter(() => rng() < p);
    if (seeds.length < 2) continue;
    offer({ crashAt: w.crashAt, lost: closure(g, w.crashAt, seeds), kind: 'drop-many' });
  }
  const enumerated = seen.size;
  const kinds = { prefix: pools.prefix.length, 'drop-one': pools['drop-one'].length, 'drop-many': pools['drop-many'].length };
  // Take from the three pools in turn, each in a seeded random order, up to the cap.
  const order = (['prefix', 'drop-one', 'drop-many'] as const).map((k) => shuffle(pools[k], rng));
  const states: CrashState[] = [];
  for (let round = 0; states.length < opts.cap && order.some((p) => p.length > round); round++) {
    for (const p of order) if (round < p.length && states.length < opts.cap) states.push(p[round] as CrashState);
  }
  return { states, enumerated, kinds };
}

function shuffle<T>(xs: T[], rng: () => number): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [a[i], a[j]] = [a[j] as T, a[i] as T];
  }
  return a;
}

// Drops the `nth` (0-based) operation matching `pick` from the trace: the model of "this sync
// was not there", for the mutation tests.
export function withoutOp(ops: readonly FsOp[], pick: (op: FsOp, i: number) => boolean, nth = 0): FsOp[] {
  let seen = 0;
  const at = ops.findIndex((op, i) => pick(op, i) && seen++ === nth);
  if (at < 0) throw new Error('no operation matches the mutation');
  return [...ops.slice(0, at), ...ops.slice(at + 1)];
}
