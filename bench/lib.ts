import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { startHelper, unitEnvironment, unitNodeFlags, type HelperProcess, type TestHost } from '../test/helpers/host.js';

// What every bench script shares: its flags, the figures of a series, and one row printed
// as text or, with --json, as one JSON object per line for bench/run-all.

export interface BenchArgs {
  quick: boolean;
  json: boolean;
  runs: number;
  // The values of a script's own options (`--nodes 40` gives rest.nodes = '40').
  rest: Record<string, string>;
}

// `--quick` (few runs, small inputs, for CI), `--json`, `--runs N`, and the options of
// `valueOptions` (each followed by its value). Anything else is refused, so that a typo is not
// a silent full run.
export function benchArgs(defaultRuns: number, quickRuns: number, valueOptions: string[] = []): BenchArgs {
  const argv = process.argv.slice(2);
  const out: BenchArgs = { quick: false, json: false, runs: 0, rest: {} };
  let runs: number | null = null;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--quick') out.quick = true;
    else if (a === '--json') out.json = true;
    else if ((a === '--runs' || valueOptions.includes(a)) && argv[i + 1] !== undefined) {
      const v = argv[++i] as string;
      if (a === '--runs') runs = Math.max(1, Number(v) | 0);
      else out.rest[a.slice(2)] = v;
    } else {
      throw new Error(`unknown argument ${a} (takes --quick, --json, --runs N${valueOptions.map((o) => `, ${o} VALUE`).join('')})`);
    }
  }
  out.runs = runs ?? (out.quick ? quickRuns : defaultRuns);
  return out;
}

export interface Series {
  median: number;
  min: number;
  max: number;
  p99: number;
  n: number;
}

export function series(xs: number[]): Series {
  if (xs.length === 0) return { median: NaN, min: NaN, max: NaN, p99: NaN, n: 0 };
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
  const p99 = s[Math.min(s.length - 1, Math.ceil(0.99 * s.length) - 1)] as number;
  return { median, min: s[0] as number, max: s[s.length - 1] as number, p99, n: s.length };
}

// The median of a non-empty list.
export function median(xs: number[]): number {
  if (xs.length === 0) throw new Error('median of no values');
  return series(xs).median;
}

// The q-quantile (0..1) of a non-empty list, by nearest rank.
export function quantile(xs: number[], q: number): number {
  if (xs.length === 0) throw new Error('quantile of no values');
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] as number;
}

export interface Row {
  // Issue 8's row number, or a name beside it ('7 closed').
  row: number | string;
  what: string;
  unit: string;
  steward: Series;
  // The peer's figures in the same run (absent for an absolute target).
  peer?: Series;
  peerWhat?: string;
  // steward/peer pair by pair, so drift of the machine's speed cancels out.
  ratio?: Series;
  target: string;
  met: boolean;
  extra?: Record<string, unknown>;
  // Anything else a reader needs to trust the figure, in words.
  notes?: string;
}

function fmt(s: Series, digits = 2): string {
  return `${s.median.toFixed(digits)} (min ${s.min.toFixed(digits)}, max ${s.max.toFixed(digits)})`;
}

// Prints a row; the load average goes with it because the machine is shared.
export function printRow(args: BenchArgs, row: Row): void {
  const load = os.loadavg().map((x) => Number(x.toFixed(2)));
  if (args.json) {
    process.stdout.write(JSON.stringify({ ...row, runs: row.steward.n, quick: args.quick, load }) + '\n');
    return;
  }
  const lines = [`row ${row.row}: ${row.what}`, `  steward: ${fmt(row.steward)} ${row.unit}`];
  if (row.peer) lines.push(`  peer (${row.peerWhat}): ${fmt(row.peer)} ${row.unit}`);
  if (row.ratio) lines.push(`  ratio steward/peer: ${fmt(row.ratio)}`);
  for (const [k, v] of Object.entries(row.extra ?? {})) lines.push(`  ${k}: ${typeof v === 'number' ? v.toFixed(2) : JSON.stringify(v)}`);
  if (row.notes) lines.push(`  ${row.notes}`);
  lines.push(`  target: ${row.target}: ${row.met ? 'met' : 'MISSED'}   (runs ${row.steward.n}${args.quick ? ', --quick' : ''}, load ${load.join(' ')})`);
  process.stdout.write(lines.join('\n') + '\n');
}

// Pairwise ratios a[i]/b[i] (runs interleaved, so drift of the machine's speed cancels out).
export function ratios(a: number[], b: number[]): number[] {
  const n = Math.min(a.length, b.length);
  return a.slice(0, n).map((x, i) => x / (b[i] as number));
}

// Prints a note (text mode only: --json output stays one object per row).
export function note(args: BenchArgs, text: string): void {
  if (!args.json) process.stderr.write(text + '\n');
}

export function ms(startNs: bigint): number {
  return Number(process.hrtime.bigint() - startNs) / 1e6;
}

// Is a command on PATH (the peers need GNU tar, sha512sum, sync)?
export function haveCommand(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

// A helper started as its unit starts it: the node flags and environment of
// systemd/steward-helper.service, and no debug log (the tests' helpers log everything, which is
// not what a host runs).
export function startInstalledHelper(host: TestHost): Promise<HelperProcess> {
  return startHelper(host, { DEBUG: '', ...unitEnvironment('steward-helper.service') }, { nodeArgs: unitNodeFlags('steward-helper.service') });
}

// sysconf(_SC_CLK_TCK): 100 on every Linux this runs on.
const CLOCK_TICKS = 100;

// CPU milliseconds (user + system, every thread) a process has used, from /proc/<pid>/stat; with
// `children`, those of its children that it has waited for (cutime + cstime) instead.
export function cpuMsOf(pid: number | 'self', children = false): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  // After "pid (comm) ", field 3 (state) is index 0: utime is field 14, stime 15, cutime 16, cstime 17.
  const at = children ? 13 : 11;
  return ((Number(fields[at]) + Number(fields[at + 1])) * 1000) / CLOCK_TICKS;
}
