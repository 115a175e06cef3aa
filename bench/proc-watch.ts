import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';

// What the respawn and footprint benches share: finding an app's process by its command line in
// the host's /proc (which also shows every process of a container on this host), timing a
// SIGKILL until a replacement exists, reading a process's footprint, and printing a row.

export interface BenchArgs {
  quick: boolean;
  json: boolean;
  runs: number;
}

// `--quick` (few runs, for CI), `--json` (one JSON object per row), `--runs N`.
export function benchArgs(defaultRuns: number, quickRuns: number): BenchArgs {
  const argv = process.argv.slice(2);
  const quick = argv.includes('--quick');
  const json = argv.includes('--json');
  const i = argv.indexOf('--runs');
  const runs = i >= 0 ? Math.max(1, Number(argv[i + 1]) | 0) : quick ? quickRuns : defaultRuns;
  return { quick, json, runs };
}

// The command line of a pid as its arguments, or null when it is gone (or a zombie: empty).
function argvOf(pid: string): string[] | null {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'latin1');
    if (!raw) return null;
    return raw.split('\0').slice(0, -1);
  } catch {
    return null;
  }
}

// Whether argv is `sleep <marker>` (any path to sleep): the benchmark app, after its exec.
function isApp(argv: string[] | null, marker: string): boolean {
  if (!argv || argv.length !== 2) return false;
  const a0 = argv[0] as string;
  return (a0 === 'sleep' || a0.endsWith('/sleep')) && argv[1] === marker;
}

// Live pids whose command line is `sleep <marker>`.
export function findApp(marker: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (name.charCodeAt(0) > 57) continue;
    if (isApp(argvOf(name), marker)) out.push(Number(name));
  }
  return out;
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));
// Blocks this thread for `ms` (the poll cadence; no timer of the event loop in between).
export function sleepSync(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}

export interface Respawn {
  // Milliseconds from just before kill(2) to the scan that first saw the replacement.
  ms: number;
  oldPid: number;
  newPid: number;
  // How many /proc scans it took (each followed by a 1 ms sleep).
  scans: number;
}

// SIGKILLs the one process running `sleep <marker>` and polls /proc every 1 ms until another
// process runs `sleep <marker>`. Only pids that did not exist before the kill are read on each
// scan, so a scan costs about one readdir of /proc. A pid that exists but still runs its
// parent's image (forked, not yet exec'd) is read again on the next scan.
export function killAndTimeRespawn(marker: string, timeoutMs = 20_000): Respawn {
  const now = findApp(marker);
  if (now.length !== 1) throw new Error(`expected one process running sleep ${marker}, found ${now.length}: ${now.join(' ')}`);
  const oldPid = now[0] as number;
  const known = new Set(readdirSync('/proc'));
  const t0 = process.hrtime.bigint();
  process.kill(oldPid, 'SIGKILL');
  let scans = 0;
  for (;;) {
    scans++;
    for (const name of readdirSync('/proc')) {
      if (known.has(name) || name.charCodeAt(0) > 57) continue;
      if (isApp(argvOf(name), marker)) {
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        return { ms, oldPid, newPid: Number(name), scans };
      }
    }
    if (Number(process.hrtime.bigint() - t0) / 1e6 > timeoutMs) throw new Error(`no replacement for sleep ${marker} within ${timeoutMs} ms`);
    sleepSync(1);
  }
}

// Waits (polling every 20 ms) until exactly one process runs `sleep <marker>`; returns its pid.
export async function waitForApp(marker: string, timeoutMs = 30_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pids = findApp(marker);
    if (pids.length === 1) return pids[0] as number;
    if (Date.now() > deadline) throw new Error(`timed out waiting for one process running sleep ${marker} (found ${pids.length})`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export interface Series {
  median: number;
  min: number;
  max: number;
  n: number;
}

export function series(xs: number[]): Series {
  if (xs.length === 0) return { median: NaN, min: NaN, max: NaN, n: 0 };
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
  return { median, min: s[0] as number, max: s[s.length - 1] as number, n: s.length };
}

// Pairwise ratios a[i]/b[i] (runs interleaved, so drift of the machine's speed cancels out).
export function ratios(a: number[], b: number[]): number[] {
  const n = Math.min(a.length, b.length);
  return a.slice(0, n).map((x, i) => x / (b[i] as number));
}

export interface Row {
  row: number;
  what: string;
  unit: string;
  steward: Series;
  peer?: Series;
  peerWhat?: string;
  ratio?: Series;
  target: string;
  met: boolean;
  extra?: Record<string, unknown>;
}

function fmt(s: Series, digits = 2): string {
  return `${s.median.toFixed(digits)} (min ${s.min.toFixed(digits)}, max ${s.max.toFixed(digits)})`;
}

// Prints a row as text, or with --json as one JSON object on one line; the load average goes
// with it because the machine is shared.
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
  lines.push(`  target: ${row.target}: ${row.met ? 'met' : 'MISSED'}   (runs ${row.steward.n}${args.quick ? ', --quick' : ''}, load ${load.join(' ')})`);
  process.stdout.write(lines.join('\n') + '\n');
}

// Prints a note (text mode only: --json output stays one object per row).
export function note(args: BenchArgs, text: string): void {
  if (!args.json) process.stderr.write(text + '\n');
}
