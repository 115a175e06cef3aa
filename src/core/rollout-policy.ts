// The numbers of a rollout policy (docs/design.md §11): a count or a percentage of the targets frozen at
// the run's start, and the seeded order canaries are chosen in. Pure.
import { StewardError } from './errors.js';

// "5" or "10%".
export type Amount = { count: number } | { percent: number };

// Parses `--batch N|P%` (at least 1, or 1-100 %) and `--max-refused N|P%` (0 allowed).
export function parseAmount(text: string, flag: string, opts: { min: number }): Amount {
  const m = /^(\d{1,9})(%?)$/.exec(text.trim());
  const n = m ? Number(m[1]) : NaN;
  if (!m || (m[2] ? n > 100 || n < Math.max(opts.min, 1) : n < opts.min)) {
    throw new StewardError('USAGE', `${flag} ${JSON.stringify(text)} is not ${opts.min > 0 ? 'a count of at least 1' : 'a count'} or a percentage of the targets (like 5 or 10%)`);
  }
  return m[2] ? { percent: n } : { count: n };
}

// The amount as given: "5" or "10%".
export function formatAmount(a: Amount): string {
  return 'percent' in a ? `${a.percent}%` : String(a.count);
}

// A batch's size over `targets` nodes: a percentage rounds up, and is at least 1.
export function batchSizeOf(a: Amount, targets: number): number {
  if ('count' in a) return Math.max(1, a.count);
  return Math.max(1, Math.ceil((a.percent * targets) / 100));
}

// How many refusals a run tolerates over `targets` nodes: a percentage rounds down.
export function refusalLimitOf(a: Amount, targets: number): number {
  if ('count' in a) return a.count;
  return Math.floor((a.percent * targets) / 100);
}

// A node's place in the seeded canary order: a 32-bit hash of the seed and the nodeId
// (FNV-1a, then murmur3's finalizer), so the same seed gives the same canaries.
export function canaryRank(seed: number, nodeId: string): number {
  let h = 0x811c9dc5 ^ (seed >>> 0);
  for (let i = 0; i < nodeId.length; i++) {
    h ^= nodeId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

// The first `n` of `candidates` in canary order: the named ones first, in the order given, then
// the others by rank (ties by nodeId). O(candidates × n); n is a handful.
export function pickCanaries(candidates: readonly string[], named: readonly string[], seed: number, n: number): string[] {
  if (n <= 0) return [];
  const set = new Set(candidates);
  const out = named.filter((id) => set.has(id)).slice(0, n);
  const taken = new Set(out);
  const best: Array<{ id: string; rank: number }> = [];
  const need = n - out.length;
  if (need <= 0) return out;
  for (const id of candidates) {
    if (taken.has(id)) continue;
    const rank = canaryRank(seed, id);
    if (best.length === need && !before({ id, rank }, best[best.length - 1]!)) continue;
    let i = best.length;
    while (i > 0 && before({ id, rank }, best[i - 1]!)) i--;
    best.splice(i, 0, { id, rank });
    if (best.length > need) best.pop();
  }
  return [...out, ...best.map((b) => b.id)];
}

function before(a: { id: string; rank: number }, b: { id: string; rank: number }): boolean {
  return a.rank < b.rank || (a.rank === b.rank && a.id < b.id);
}
