// The one-sided Mann-Whitney U test (docs/design.md §19, "Judgement"): how likely a canary cohort at
// least this far above the baseline would be if both came from one distribution. Nonparametric,
// as Kayenta's judge: per-node rates are counts, mostly small and often tied at zero, which no
// normal model fits. Exact (every split of the ranks counted, ties as mid-ranks) while that is
// cheap; a normal approximation with the tie correction beyond.

// Beyond this many steps the exact count gives way to the normal approximation: large cohorts of
// mostly distinct values, where it is accurate. Counts tied at a few values (restarts: most nodes
// at 0, some at 1) are counted exactly whatever the cohorts' size: there the approximation's tail
// is far too light (with 5 canaries against 500, it failed 8 % of simulated identical releases).
const EXACT_WORK = 100_000_000;

export interface MannWhitney {
  // U of the canaries: how many (canary, baseline) pairs the canary wins, ties counting half.
  u: number;
  // P(U >= u) when the cohorts do not differ.
  p: number;
  exact: boolean;
}

// The one-sided test that `canary` is stochastically greater than `baseline`. Both non-empty.
// `approximate` takes the normal approximation whatever the sizes (tests compare it with the exact).
export function mannWhitneyGreater(canary: readonly number[], baseline: readonly number[], approximate = false): MannWhitney {
  const n1 = canary.length;
  const n2 = baseline.length;
  if (n1 === 0 || n2 === 0) throw new Error('mannWhitneyGreater needs two non-empty samples');
  const all = [...canary.map((v) => ({ v, c: true })), ...baseline.map((v) => ({ v, c: false }))].sort((a, b) => a.v - b.v);
  const n = all.length;
  // Doubled mid-ranks: integers, so that the exact count can index by them.
  const rank2 = new Array<number>(n);
  const ties: number[] = [];
  for (let i = 0; i < n; ) {
    let j = i;
    while (j + 1 < n && all[j + 1]!.v === all[i]!.v) j++;
    for (let k = i; k <= j; k++) rank2[k] = i + j + 2;
    ties.push(j - i + 1);
    i = j + 1;
  }
  let sum2 = 0;
  for (let k = 0; k < n; k++) if (all[k]!.c) sum2 += rank2[k]!;
  const u = sum2 / 2 - (n1 * (n1 + 1)) / 2;
  const groups: Array<{ rank2: number; size: number }> = [];
  for (let k = 0; k < n; k++) {
    const last = groups[groups.length - 1];
    if (last && last.rank2 === rank2[k]) last.size++;
    else groups.push({ rank2: rank2[k]!, size: 1 });
  }
  const m = Math.min(n1, n2);
  const work = groups.reduce((a, g) => a + m * Math.min(g.size, m), 0) * (2 * n * m);
  if (!approximate && work <= EXACT_WORK) return { u, p: exactUpper(groups, n1, n2, sum2), exact: true };
  return { u, p: normalUpper(u, n1, n2, ties), exact: false };
}

// The smallest p the test can give for cohorts of n1 and n2 (no ties): the canaries all above
// every baseline node. When it is above the level asked, the test cannot fail the canaries
// whatever they do, and a pass would mean nothing.
export function smallestP(n1: number, n2: number): number {
  const m = Math.min(n1, n2);
  let c = 1;
  for (let i = 1; i <= m; i++) c = (c * (n1 + n2 - m + i)) / i;
  return 1 / c;
}

// P(S >= s) for S the sum of n1 doubled ranks drawn without replacement, counted over every
// subset of the smaller cohort's size: tie group by tie group, j of a group's `size` items chosen
// in C(size, j) ways.
function exactUpper(groups: ReadonlyArray<{ rank2: number; size: number }>, n1: number, n2: number, canarySum2: number): number {
  const m = Math.min(n1, n2);
  const n = n1 + n2;
  const total2 = groups.reduce((a, g) => a + g.rank2 * g.size, 0);
  const maxSum = 2 * n * m + 1;
  // ways[k][s]: subsets of k items whose doubled ranks sum to s. Float64: counts pass 2^53 only
  // for cohorts far larger than canary cohorts are, and then only the last digits go.
  const ways = Array.from({ length: m + 1 }, () => new Float64Array(maxSum + 1));
  ways[0]![0] = 1;
  for (const g of groups) {
    const choose = binomials(g.size, m);
    // k downwards: ways[k - j] still holds the counts without this group.
    for (let k = m; k >= 1; k--) {
      const to = ways[k]!;
      for (let j = 1; j <= Math.min(k, g.size); j++) {
        const from = ways[k - j]!;
        const shift = j * g.rank2;
        const c = choose[j]!;
        for (let s = maxSum - shift; s >= 0; s--) if (from[s]! !== 0) to[s + shift]! += c * from[s]!;
      }
    }
  }
  const dist = ways[m]!;
  let all = 0;
  let tail = 0;
  // The canaries' sum at least canarySum2; drawn as the baseline (the smaller), its sum at most total - that.
  const inTail = n1 <= n2 ? (s: number) => s >= canarySum2 : (s: number) => s <= total2 - canarySum2;
  for (let s = 0; s <= maxSum; s++) {
    const w = dist[s]!;
    if (w === 0) continue;
    all += w;
    if (inTail(s)) tail += w;
  }
  return Math.min(1, tail / all);
}

// C(size, j) for j = 0..upTo.
function binomials(size: number, upTo: number): number[] {
  const out = [1];
  for (let j = 1; j <= Math.min(size, upTo); j++) out.push((out[j - 1]! * (size - j + 1)) / j);
  return out;
}

function normalUpper(u: number, n1: number, n2: number, ties: readonly number[]): number {
  const n = n1 + n2;
  const tieTerm = ties.reduce((a, t) => a + (t * t * t - t), 0) / (n * (n - 1));
  const variance = ((n1 * n2) / 12) * (n + 1 - tieTerm);
  if (variance <= 0) return 1;
  const z = (u - (n1 * n2) / 2 - 0.5) / Math.sqrt(variance);
  return 0.5 * erfc(z / Math.SQRT2);
}

// erfc, from Numerical Recipes' erfcc (fractional error below 1.2e-7 everywhere).
function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r =
    t *
    Math.exp(
      -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851526 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? r : 2 - r;
}
