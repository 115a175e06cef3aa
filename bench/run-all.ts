// Runs every bench script (each `dist/bench/<row>.js` but this one; helpers live in dist/bench/lib/)
// with --json (and --quick when given), one after another, and prints one table of their rows.
// Exit status 1 when a script failed or printed no row; a missed target is shown, not an error.
//
//   node dist/bench/run-all.js [--quick] [--only SUBSTRING]
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchRow } from './lib/row.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const self = path.basename(fileURLToPath(import.meta.url));

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const onlyAt = argv.indexOf('--only');
const only = onlyAt >= 0 ? argv[onlyAt + 1] : undefined;
for (const [i, a] of argv.entries()) {
  if (a !== '--quick' && a !== '--only' && !(i === onlyAt + 1 && onlyAt >= 0)) throw new Error(`unknown argument ${a} (takes --quick, --only SUBSTRING)`);
}

// The row scripts: every .js file directly in dist/bench/ except this one, sorted by name.
export function benchScripts(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.js') && e.name !== self)
    .map((e) => e.name)
    .sort();
}

// A row as a script printed it, checked field by field: the scripts are ours, but a row with a
// missing figure must show as a failure, not as a blank cell.
function asRow(x: unknown): BenchRow | null {
  const r = x as Partial<BenchRow> | null;
  if (!r || typeof r !== 'object' || typeof r.row !== 'string') return null;
  const num = (v: unknown) => typeof v === 'number' && Number.isFinite(v);
  const numOrNull = (v: unknown) => v === null || num(v);
  if (typeof r.what !== 'string' || !num(r.steward) || !numOrNull(r.peer) || !numOrNull(r.ratio) || typeof r.target !== 'string' || typeof r.met !== 'boolean') return null;
  if (typeof r.unit !== 'string' || !num(r.runs) || !num(r.min) || !num(r.max)) return null;
  return r as BenchRow;
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
    const child = spawn(process.execPath, [path.join(here, script), '--json', ...(quick ? ['--quick'] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.on('error', (err) => resolve({ script, rows: [], problem: err.message, seconds: 0 }));
    child.on('close', (code, signal) => {
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
      const problem = code !== 0 ? `exited ${code ?? signal}` : rows.length === 0 ? 'printed no row' : bad ? `${bad} malformed row(s)` : null;
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
  const scripts = benchScripts(here).filter((s) => !only || s.includes(only));
  if (scripts.length === 0) {
    process.stderr.write(`no bench scripts in ${here}${only ? ` matching ${only}` : ''}\n`);
    return 1;
  }
  const outcomes: Outcome[] = [];
  for (const s of scripts) {
    process.stderr.write(`bench: ${s}${quick ? ' --quick' : ''}\n`);
    outcomes.push(await runScript(s));
  }
  const body = outcomes.flatMap((o) =>
    o.rows.map((r) => [r.row, r.what, `${fmt(r.steward)} ${r.unit}`, r.peer === null ? '-' : `${fmt(r.peer)} ${r.unit}`, fmt(r.ratio), r.target, r.met ? 'yes' : 'NO', `${fmt(r.steward)} / ${fmt(r.min)} / ${fmt(r.max)} (${r.runs})`]),
  );
  process.stdout.write(table(['row', 'what', 'steward', 'peer', 'ratio', 'target', 'met?', 'median / min / max (runs)'], body));
  const notes = outcomes.flatMap((o) => o.rows.filter((r) => r.notes).map((r) => `${r.row}: ${r.notes}`));
  if (notes.length) process.stdout.write('\n' + notes.join('\n') + '\n');
  const failed = outcomes.filter((o) => o.problem);
  for (const o of failed) process.stdout.write(`FAILED ${o.script}: ${o.problem}\n`);
  process.stdout.write(`\n${outcomes.length} scripts, ${body.length} rows, ${failed.length} failed; ${outcomes.reduce((s, o) => s + o.seconds, 0).toFixed(0)} s; load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}\n`);
  return failed.length ? 1 : 0;
}

process.exitCode = await main();
