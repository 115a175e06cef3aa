// Runs every row script of issue 8 (ROW_SCRIPTS, as dist/bench/<name>.js) with --json (and
// --quick when given), one after another, and prints one table of their rows. Exit status 1 when
// a script failed or printed no row; a missed target is shown, not an error.
//
//   node dist/bench/run-all.js [--quick] [--only SUBSTRING[,SUBSTRING...]] [--json]
//
// A script that runs past its time (QUICK_SCRIPT_SECONDS with --quick, FULL_SCRIPT_SECONDS
// without) is killed with its whole process group and reported as failed with that reason, so a
// hang names the script instead of using up the caller's own timeout.
//
// With --json, stdout is one JSON object instead of the table: {rows, failed: [{script, problem}],
// notBuilt, seconds, load}; CI's quick run (test/bench/run-all-quick.test.ts) reads it.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const self = path.basename(fileURLToPath(import.meta.url));

// The row scripts in the order of issue 8's rows. bench/ also holds shared modules (lib.ts,
// stage-input.ts, pm2.ts, proc-watch.ts, lib/), so a script is a row only when listed here; a
// .js in dist/bench/ that is neither listed nor known as shared is named on stderr.
export const ROW_SCRIPTS = ['stage', 'stage-status', 'activation', 'respawn', 'footprint', 'status-cli', 'control-heartbeats', 'control-tls', 'rollout-advance', 'control-postgres', 'handover', 'targets-fleet', 'signal-samples', 'analysis-fleet', 'objects', 'trust'];
const SHARED = ['lib', 'stage-input', 'pm2', 'proc-watch'];
// Each quick script takes under 20 s on a quiet 2-core machine; the full ones a few minutes.
export const QUICK_SCRIPT_SECONDS = 90;
export const FULL_SCRIPT_SECONDS = 1800;

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const json = argv.includes('--json');
const onlyAt = argv.indexOf('--only');
// The scripts whose name holds one of these (comma-separated), e.g. `footprint,status-cli` for
// issue 16's three figures in one table.
const only = onlyAt >= 0 ? argv[onlyAt + 1]?.split(',') : undefined;
for (const [i, a] of argv.entries()) {
  if (a !== '--quick' && a !== '--json' && a !== '--only' && !(i === onlyAt + 1 && onlyAt >= 0)) throw new Error(`unknown argument ${a} (takes --quick, --only SUBSTRING[,SUBSTRING...], --json)`);
}

// The listed scripts that are built, and the .js files nobody listed (named so they get listed).
function benchScripts(dir: string): { present: string[]; absent: string[]; unlisted: string[] } {
  const files = readdirSync(dir).filter((n) => n.endsWith('.js') && n !== self).map((n) => n.slice(0, -3));
  return {
    present: ROW_SCRIPTS.filter((n) => existsSync(path.join(dir, `${n}.js`))).map((n) => `${n}.js`),
    absent: ROW_SCRIPTS.filter((n) => !existsSync(path.join(dir, `${n}.js`))),
    unlisted: files.filter((n) => !ROW_SCRIPTS.includes(n) && !SHARED.includes(n)),
  };
}

// One line of the table: a row as a script printed it (bench/lib.ts printRow), its series
// reduced to the median, min and max.
interface BenchRow {
  row: string;
  what: string;
  steward: number;
  peer: number | null;
  ratio: number | null;
  target: string;
  met: boolean;
  unit: string;
  runs: number;
  min: number;
  max: number;
  notes: string;
}

// A row as a script printed it, checked field by field: the scripts are ours, but a row with a
// missing figure must show as a failure, not as a blank cell.
function asRow(x: unknown): BenchRow | null {
  const r = x as Record<string, unknown> | null;
  if (!r || typeof r !== 'object' || (typeof r.row !== 'string' && typeof r.row !== 'number')) return null;
  const num = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
  // Each figure is a series {median, min, max, n}.
  const series = (v: unknown) => (v && typeof v === 'object' && num((v as { median?: unknown }).median) ? (v as { median: number; min: number; max: number; n: number }) : null);
  const s = series(r.steward);
  if (!s || !num(s.min) || !num(s.max) || !num(s.n)) return null;
  const optional = (v: unknown): number | null | undefined => (v === undefined ? null : (series(v)?.median ?? undefined));
  const peer = optional(r.peer);
  const ratio = optional(r.ratio);
  if (peer === undefined || ratio === undefined) return null;
  if (typeof r.what !== 'string' || typeof r.target !== 'string' || typeof r.met !== 'boolean' || typeof r.unit !== 'string') return null;
  return { row: String(r.row), what: r.what, steward: s.median, peer, ratio, target: r.target, met: r.met, unit: r.unit, runs: s.n, min: s.min, max: s.max, notes: notesOf(r) };
}

// The peer's name, the extra figures, the notes and the load of a row, as one notes line.
function notesOf(r: Record<string, unknown>): string {
  const parts: string[] = [];
  if (typeof r.peerWhat === 'string') parts.push(`peer: ${r.peerWhat}`);
  for (const [k, v] of Object.entries((r.extra as Record<string, unknown> | undefined) ?? {})) parts.push(`${k} ${typeof v === 'number' ? Number(v.toPrecision(4)) : JSON.stringify(v)}`);
  if (typeof r.notes === 'string' && r.notes) parts.push(r.notes);
  if (Array.isArray(r.load)) parts.push(`load ${r.load.join(' ')}`);
  return parts.join('; ');
}

interface Outcome {
  script: string;
  rows: BenchRow[];
  problem: string | null;
  seconds: number;
}

// Runs one script; its stderr passes through, its stdout is read for JSON rows (other lines ignored).
function runScript(script: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    // detached: its own process group, so a timeout takes the helpers and peers it started too.
    const child = spawn(process.execPath, [path.join(here, script), '--json', ...(quick ? ['--quick'] : [])], { stdio: ['ignore', 'pipe', 'inherit'], detached: true });
    let out = '';
    let timedOut = false;
    const limit = quick ? QUICK_SCRIPT_SECONDS : FULL_SCRIPT_SECONDS;
    const timer = setTimeout(() => {
      timedOut = true;
      process.stderr.write(`bench: ${script} still running after ${limit} s: killing its process group\n`);
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, limit * 1000);
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ script, rows: [], problem: err.message, seconds: 0 });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const rows: BenchRow[] = [];
      let bad = 0;
      for (const line of out.split('\n')) {
        if (!line.startsWith('{')) continue;
        let parsed: unknown;
        try {
          parsed = JSON.parse(line);
        } catch {
          bad++;
          continue;
        }
        const row = asRow(parsed);
        if (row) rows.push(row);
        else bad++;
      }
      const problem = timedOut ? `timed out after ${limit} s (killed)` : code !== 0 ? `exited ${code ?? signal}` : rows.length === 0 ? 'printed no row' : bad ? `${bad} malformed row(s)` : null;
      resolve({ script, rows, problem, seconds: (performance.now() - t0) / 1000 });
    });
  });
}

function fmt(x: number | null): string {
  if (x === null) return '-';
  if (Math.abs(x) >= 100) return Math.round(x).toString();
  return Number(x.toPrecision(3)).toString();
}

// A plain-text table, columns padded to their widest cell.
function table(head: string[], body: string[][]): string {
  const w = head.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(w[i]!)).join('  ').trimEnd();
  return [line(head), line(w.map((n) => '-'.repeat(n))), ...body.map(line)].join('\n') + '\n';
}

async function main(): Promise<number> {
  const found = benchScripts(here);
  for (const n of found.unlisted) process.stderr.write(`bench: dist/bench/${n}.js is not in run-all's ROW_SCRIPTS (nor a shared module): not run\n`);
  const scripts = found.present.filter((s) => !only || only.some((o) => s.includes(o)));
  if (scripts.length === 0) {
    process.stderr.write(`no bench scripts in ${here}${only ? ` matching ${only.join(' or ')}` : ''}\n`);
    return 1;
  }
  const outcomes: Outcome[] = [];
  for (const s of scripts) {
    process.stderr.write(`bench: ${s}${quick ? ' --quick' : ''}\n`);
    const o = await runScript(s);
    process.stderr.write(`bench: ${s} took ${o.seconds.toFixed(1)} s${o.problem ? `: ${o.problem}` : ''}\n`);
    outcomes.push(o);
  }
  const failed = outcomes.filter((o) => o.problem);
  const seconds = outcomes.reduce((s, o) => s + o.seconds, 0);
  if (json) {
    const rows = outcomes.flatMap((o) => o.rows.map((r) => ({ script: o.script, ...r })));
    process.stdout.write(JSON.stringify({ rows, failed: failed.map((o) => ({ script: o.script, problem: o.problem })), scripts: outcomes.map((o) => ({ script: o.script, seconds: o.seconds })), notBuilt: found.absent, seconds, load: os.loadavg() }) + '\n');
    return failed.length ? 1 : 0;
  }
  const body = outcomes.flatMap((o) =>
    o.rows.map((r) => [r.row, r.what, `${fmt(r.steward)} ${r.unit}`, r.peer === null ? '-' : `${fmt(r.peer)} ${r.unit}`, fmt(r.ratio), r.target, r.met ? 'yes' : 'NO', `${fmt(r.steward)} / ${fmt(r.min)} / ${fmt(r.max)} (${r.runs})`]),
  );
  process.stdout.write(table(['row', 'what', 'steward', 'peer', 'ratio', 'target', 'met?', 'median / min / max (runs)'], body));
  const notes = outcomes.flatMap((o) => o.rows.filter((r) => r.notes).map((r) => `${r.row}: ${r.notes}`));
  if (notes.length) process.stdout.write('\n' + notes.join('\n') + '\n');
  for (const o of failed) process.stdout.write(`FAILED ${o.script}: ${o.problem}\n`);
  if (found.absent.length) process.stdout.write(`not built here: ${found.absent.join(', ')}\n`);
  process.stdout.write(`\n${outcomes.length} scripts, ${body.length} rows, ${failed.length} failed; ${seconds.toFixed(0)} s; load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}\n`);
  return failed.length ? 1 : 0;
}

process.exitCode = await main();
