// What every bench script prints (bench/README.md "The convention"): one row per figure, as a
// line of text for a person, or with --json as one JSON object on its own stdout line, which
// bench/run-all reads to build the table.

export interface BenchRow {
  // A short stable id, e.g. "control-heartbeats".
  row: string;
  // What is measured, in words.
  what: string;
  // steward's figure: the median over `runs`.
  steward: number;
  // The peer's figure measured in the same run (median), or null when the target is absolute.
  peer: number | null;
  // steward / peer, the median of the run-by-run ratios, or null without a peer.
  ratio: number | null;
  // The target in words, e.g. ">= 2000/s" or "ratio <= 1.5".
  target: string;
  met: boolean;
  unit: string;
  runs: number;
  // steward's smallest and largest figure over the runs.
  min: number;
  max: number;
  // Anything a reader needs to trust the figure (the peer's name, errors seen, load average).
  notes?: string;
}

export interface BenchArgs {
  json: boolean;
  quick: boolean;
}

// --json and --quick; anything else is refused so a typo is not a silent full run.
export function parseBenchArgs(argv: string[], extra: string[] = []): BenchArgs & { rest: Record<string, string> } {
  const out = { json: false, quick: false, rest: {} as Record<string, string> };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--json') out.json = true;
    else if (a === '--quick') out.quick = true;
    else if (extra.includes(a) && argv[i + 1] !== undefined) out.rest[a.slice(2)] = argv[++i]!;
    else throw new Error(`unknown argument ${a} (takes --json, --quick${extra.map((e) => `, ${e} VALUE`).join('')})`);
  }
  return out;
}

// The median of a non-empty list (the mean of the middle two for an even count).
export function median(xs: number[]): number {
  if (xs.length === 0) throw new Error('median of no values');
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

// The q-quantile (0..1) of a list by nearest rank.
export function quantile(xs: number[], q: number): number {
  if (xs.length === 0) throw new Error('quantile of no values');
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

function fmt(x: number | null): string {
  if (x === null) return '-';
  if (Math.abs(x) >= 100) return Math.round(x).toString();
  return Number(x.toPrecision(3)).toString();
}

// Prints a row: JSON for run-all, or a readable line.
export function printRow(r: BenchRow, json: boolean): void {
  if (json) {
    process.stdout.write(JSON.stringify(r) + '\n');
    return;
  }
  const peer = r.peer === null ? '' : `  peer ${fmt(r.peer)} ${r.unit}  ratio ${fmt(r.ratio)}`;
  process.stdout.write(
    `${r.row}: ${r.what}\n  steward ${fmt(r.steward)} ${r.unit} (min ${fmt(r.min)}, max ${fmt(r.max)}, ${r.runs} runs)${peer}\n` +
      `  target ${r.target}: ${r.met ? 'met' : 'MISSED'}${r.notes ? `\n  ${r.notes}` : ''}\n`,
  );
}
